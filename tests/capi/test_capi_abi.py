"""The installed headers are what the API table generates today (they are generated when the
distribution is built: none is checked in), and the generated OffloadAPI.h is LLVM 22's ABI: the
same prototypes (gcc -aux-info), enumerator values and struct layouts as Debian's liboffload-22-dev
header; R1's and main's number their enumerators as offload does at those API levels."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import Capi, Debian, _tool

CAPI = pathlib.Path(__file__).resolve().parents[2] / "capi"


LEVELS = {"llvm22": ("", "libLLVMOffload.so.22.1"), "r1": ("r1", "libLLVMOffload.so.23.0git"),
          "main": ("main", "libLLVMOffload.so.23.0git")}


def test_installed_headers_are_what_the_table_generates(capi: Capi, tmp_path: pathlib.Path) -> None:
    """The checkout's generator (capi/src) over the table now, as the build runs it, writes every
    level's header exactly as installed (a table change needs a reinstall), and nothing of it is tracked."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(CAPI / "src"), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-m", "offload_capi.generate", str(tmp_path)], check=True, env=env)
    for level, (folder, _) in LEVELS.items():
        generated = (tmp_path / "include" / folder / "offload/OffloadAPI.h").read_text()
        assert (capi.includedir / folder / "offload/OffloadAPI.h").read_text() == generated, level
    assert (tmp_path / "entry.c").is_file()
    tracked = subprocess.run(["git", "ls-files", "--", str(CAPI)], capture_output=True, text=True, cwd=CAPI)
    if tracked.returncode == 0:
        assert not [f for f in tracked.stdout.splitlines() if f.endswith(("OffloadAPI.h", "/entry.c"))], tracked.stdout


def _prototypes(include: pathlib.Path, tmp: pathlib.Path) -> list[str]:
    source = tmp / "x.c"
    source.write_text("#include <stdbool.h>\n#include <offload/OffloadAPI.h>\n")
    aux = tmp / f"aux-{abs(hash(str(include)))}.txt"
    subprocess.run([_tool("gcc"), f"-I{include}", "-fsyntax-only", "-aux-info", str(aux), str(source)], check=True)
    lines = [re.sub(r"^/\*.*?\*/ ", "", line) for line in aux.read_text().splitlines()]
    return sorted(line for line in lines if re.search(r"\bol[A-Z]\w*\s*\(", line))


def test_prototypes_match_llvm22(capi: Capi, debian: Debian, tmp_path: pathlib.Path) -> None:
    theirs, ours = _prototypes(debian.includedir, tmp_path), _prototypes(capi.includedir, tmp_path)
    assert len(theirs) == 70  # 35 functions and their *WithCodeLoc twins
    assert ours == theirs


def test_enumerators_and_layouts_match_llvm22(capi: Capi, debian: Debian, tmp_path: pathlib.Path) -> None:
    """Every enumerator of Debian's header has the same value in ours; the structs the same layout."""
    names = sorted(set(re.findall(r"^\s+(OL_\w+) = ", (debian.includedir / "offload/OffloadAPI.h").read_text(), re.M)))
    assert len(names) > 100
    body = "".join(f'printf("{n} %lld\\n", (long long){n});\n' for n in names)
    for struct, fields in (("ol_code_location_t", ("FunctionName", "SourceFile", "LineNumber", "ColumnNumber")),
                           ("ol_dimensions_t", ("x", "y", "z")), ("ol_error_struct_t", ("Code", "Details")),
                           ("ol_kernel_launch_size_args_t", ("Dimensions", "NumGroups", "GroupSize", "DynSharedMemory"))):
        body += f'printf("sizeof {struct} %zu\\n", sizeof({struct}));\n'
        body += "".join(f'printf("{struct}.{f} %zu\\n", offsetof({struct}, {f}));\n' for f in fields)
    source = tmp_path / "dump.c"
    source.write_text("#include <stdio.h>\n#include <stddef.h>\n#include <stdbool.h>\n#include <offload/OffloadAPI.h>\n"
                      f"int main(void) {{\n{body}return 0;\n}}\n")
    outputs = []
    for include in (debian.includedir, capi.includedir):
        exe = tmp_path / f"dump{len(outputs)}"
        subprocess.run([_tool("gcc"), f"-I{include}", str(source), "-o", str(exe)], check=True)
        outputs.append(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    assert outputs[1] == outputs[0]


@pytest.mark.parametrize("level", ["r1", "main"])
def test_header_numbers_as_offload_does_at_its_level(capi: Capi, tmp_path: pathlib.Path, level: str) -> None:
    """The generated R1 and main headers' enumerators are offload's C constants at that API level
    (no peer library of R1 or main to compare with: offload's own numbering is the reference)."""
    import offload
    from offload._values.enums import c_constants

    include = capi.includedir / LEVELS[level][0]
    header = (include / "offload/OffloadAPI.h").read_text()
    names = sorted(set(re.findall(r"^\s+(OL_\w+) = ", header, re.M)) - {n for n in re.findall(r"^\s+(OL_\w+_LAST) = ", header, re.M)})
    constants = c_constants(level)
    body = "".join(f'printf("{n} %lld\\n", (long long){n});\n' for n in names)
    source = tmp_path / "dump.c"
    source.write_text(f"#include <stdio.h>\n#include <stdbool.h>\n#include <offload/OffloadAPI.h>\nint main(void) {{\n{body}return 0;\n}}\n")
    exe = tmp_path / "dump"
    subprocess.run([_tool("gcc"), f"-I{include}", str(source), "-o", str(exe)], check=True)
    out = dict(line.split() for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines())
    assert {name: int(value) for name, value in out.items()} == {name: constants[name] for name in out}
    assert offload.OL_DEVICE_INFO_NUM_LANES == int(out["OL_DEVICE_INFO_NUM_LANES"])
    if level == "main":
        assert int(out["OL_ERRC_INVALID_CONTEXT"]) == 24 and int(out["OL_QUEUE_INFO_CONTEXT"]) == 1


def test_each_level_exports_its_header_functions(capi: Capi) -> None:
    """entry.c serves every level (its #if pieces): each level's library exports exactly the
    functions its header declares, each with its WithCodeLoc twin, and no other."""
    for level, (folder, soname) in LEVELS.items():
        header = (capi.includedir / folder / "offload/OffloadAPI.h").read_text()
        declared = set(re.findall(r"^OL_APIEXPORT ol_result_t OL_APICALL (ol\w+)\(", header, re.M))
        nm = subprocess.run([_tool("nm"), "-D", "--defined-only", str(capi.libdir / folder / soname)],
                            capture_output=True, text=True, check=True).stdout
        exported = {line.split()[-1].split("@")[0] for line in nm.splitlines() if line.split()[-1].startswith("ol")}
        assert declared and exported == declared, (level, sorted(exported ^ declared))
        assert {name for name in declared if not name.endswith("WithCodeLoc")} == {
            name.removesuffix("WithCodeLoc") for name in declared if name.endswith("WithCodeLoc")}, level
