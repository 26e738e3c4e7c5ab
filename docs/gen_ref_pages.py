"""Generate the API reference: one page per module of the four packages, and its navigation.

mkdocs-gen-files runs this at build time. It walks the source tree, so a module that moves into a
subpackage moves in the reference too, with no page to edit. Pages hold a ``::: module`` directive
that mkdocstrings renders from the source with griffe (nothing is imported).
"""

from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

PACKAGES = ("chess_env", "multiagent", "envkit", "training")
ROOT = Path(__file__).resolve().parents[1]

nav = mkdocs_gen_files.Nav()
for package in PACKAGES:
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__" or any(p.startswith("_") and p != "__init__" for p in parts):
            continue  # entry points and private modules are not API
        if parts[-1] == "__init__":
            parts = parts[:-1]
            page = Path(*parts, "index.md")
        else:
            page = Path(*parts).with_suffix(".md")
        nav[parts] = page.as_posix()
        with mkdocs_gen_files.open(Path("reference", page), "w") as out:
            out.write(f"::: {'.'.join(parts)}\n")
        mkdocs_gen_files.set_edit_path(Path("reference", page), path.relative_to(ROOT))

with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as summary:
    summary.writelines(nav.build_literate_nav())
