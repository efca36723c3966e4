"""The version of every offload distribution: the VERSION file beside this module, the one place
(each project's pyproject reads it through a link; the requirements between them are pinned to it)."""

from pathlib import Path

__version__ = Path(__file__).with_name("VERSION").read_text().strip()
