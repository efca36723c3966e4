"""Corrupted program images never crash the process, and olIsValidBinary agrees with
olCreateProgram on every one of them.

A fixed seed in CI (``OFFLOAD_FUZZ_IMAGES`` images, 8000 by default; ``OFFLOAD_FUZZ_SEED``),
split into batches that each run in child processes: a crash fails its batch and names the
image (base image, region, mutations), and the batch goes on with the next image.

One kind of crash is not the loader's and is counted apart: an image whose relocations still
write exactly where the clean image's did (or were dropped), only computing other values (another
symbol, another addend, RELATIVE instead of GLOB_DAT): the program's data then means something
else, exactly like a flipped bit in its code, and the program's code crashes on it
(``elf_mutations.changes_only_relocation_meaning``). The same holds for a stripped image whose
constructor or destructor addresses moved inside its code: without a symbol table nothing tells
where its functions start (``elf_mutations.moves_stripped_code_pointers``). Every other crash
fails.
"""

from __future__ import annotations

import os
import pathlib

import pytest

import elf_fuzz_runner
import elf_mutations

IMAGES = int(os.environ.get("OFFLOAD_FUZZ_IMAGES", "8000"))
SEED = int(os.environ.get("OFFLOAD_FUZZ_SEED", "20261122"))
BATCH = 500


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> list[elf_mutations.BaseImage]:
    return elf_mutations.base_images() + [elf_mutations.versioned_image(str(tmp_path_factory.mktemp("verdef")))]


@pytest.fixture(scope="module")
def images(bases: list[elf_mutations.BaseImage]) -> list[tuple[str, bytes]]:
    return list(elf_mutations.corrupted_images(bases, SEED, IMAGES))


def test_every_region_of_every_base_image_is_fuzzed(bases: list[elf_mutations.BaseImage]) -> None:
    regions = {region.split(":")[0] for base in bases for region in base.regions}
    assert regions == {
        "elf_header", "program_headers", "dynamic", "dynsym", "dynstr", "hash", "relocations", "versions", "init_arrays",
    }
    sections = {region.split(":")[-1] for base in bases for region in base.regions}
    assert {".hash", ".gnu.hash", ".rela.plt", ".gnu.version_d", ".gnu.version_r"} <= sections
    if elf_mutations.UNBUILDABLE:
        print(f"not fuzzed, the linker refused them: {elf_mutations.UNBUILDABLE}")
    else:
        assert ".relr.dyn" in sections


@pytest.mark.parametrize("batch", range((IMAGES + BATCH - 1) // BATCH))
def test_corrupted_images(batch: int, images: list[tuple[str, bytes]], bases: list[elf_mutations.BaseImage], tmp_path: pathlib.Path) -> None:
    chunk = images[batch * BATCH : (batch + 1) * BATCH]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    report = elf_fuzz_runner.run_images(chunk, str(tmp))
    by_name = {base.name: base.data for base in bases}
    semantic, crashes = [], []
    for outcome, (description, data) in zip(report.outcomes, chunk):
        if outcome.crash:
            base = by_name[description.split()[1]]
            program_code = elf_mutations.changes_only_relocation_meaning(
                base, data
            ) or elf_mutations.moves_stripped_code_pointers(base, data)
            (semantic if program_code else crashes).append(outcome)
    print(f"batch {batch}: {len(chunk)} images, {sum(bool(o.valid) for o in report.outcomes)} valid, "
          f"{len(crashes)} crashes, {len(semantic)} crashes in the program's own code (relocation values or stripped code pointers changed)")
    assert not crashes, "\n".join(f"{o.crash}: {o.description}" for o in crashes)
    assert not report.raw_exceptions, "\n".join(f"{o.error}: {o.description}" for o in report.raw_exceptions)
    assert not report.disagreements, "\n".join(
        f"olIsValidBinary={o.valid} but olCreateProgram {'succeeded' if o.created else 'failed: ' + o.error}: {o.description}"
        for o in report.disagreements
    )
    codes = {o.error for o in report.outcomes if not o.crash}
    assert codes <= {"", "INVALID_BINARY"}, codes
    assert os.listdir(tmp) == [], "an image copy was left in TMPDIR"
