"""The arena: tournaments between any players, ratings on one anchored scale, scorecards."""
