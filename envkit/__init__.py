"""What both env families share: Malli-lite schemas, frozen DTOs, the OpenEnv server core.

Filled in by later issues; see DESIGN.md for the public names it will hold.
"""
