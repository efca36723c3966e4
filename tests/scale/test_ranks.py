"""Device per local rank: the launchers' variables, Ray's accelerator ids, and default_device()."""

from __future__ import annotations

import pytest

import offload
from offload._core import ranks as _ranks
from offload._core.session import STATE
from offload.objects import _session

LAUNCHER_VARIABLES = [v for pair in _ranks.LOCAL_RANK_VARIABLES for v in pair] + list(_ranks.RANK_VARIABLES)


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts outside any launcher (the suite itself may run under one)."""
    for variable in LAUNCHER_VARIABLES + ["OFFLOAD_DEVICE", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"]:
        monkeypatch.delenv(variable, raising=False)


@pytest.mark.parametrize(
    ("env", "rank", "size", "variable"),
    [
        ({"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "8"}, 3, 8, "OMPI_COMM_WORLD_LOCAL_RANK"),
        ({"MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"}, 1, 2, "MPI_LOCALRANKID"),
        ({"PMI_LOCAL_RANK": "5"}, 5, None, "PMI_LOCAL_RANK"),
        ({"SLURM_LOCALID": "2", "SLURM_NTASKS_PER_NODE": "4"}, 2, 4, "SLURM_LOCALID"),
        ({"LOCAL_RANK": "7", "LOCAL_WORLD_SIZE": "8"}, 7, 8, "LOCAL_RANK"),
        # Open MPI's variable wins over Slurm's when mpirun runs inside an allocation
        ({"SLURM_LOCALID": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}, 1, None, "OMPI_COMM_WORLD_LOCAL_RANK"),
        # a value that is not a non-negative int is not a rank: the next variable is read
        ({"OMPI_COMM_WORLD_LOCAL_RANK": "x", "SLURM_LOCALID": "4"}, 4, None, "SLURM_LOCALID"),
    ],
)
def test_local_rank_from_each_launcher(env: dict[str, str], rank: int, size: int | None, variable: str) -> None:
    assert _ranks.local_rank(env) == _ranks.LocalRank(rank, size, variable)


def test_no_launcher_no_rank() -> None:
    assert _ranks.local_rank({}) is None
    assert _ranks.local_rank({"OMPI_COMM_WORLD_LOCAL_RANK": "-1"}) is None
    assert _ranks.global_rank({}) is None
    assert _ranks.spread(4, "host", {}, ray_ids=[]) is None


def test_global_rank_prefers_the_job_wide_variable() -> None:
    assert _ranks.global_rank({"OMPI_COMM_WORLD_RANK": "12", "OMPI_COMM_WORLD_LOCAL_RANK": "4"}) == 12
    assert _ranks.global_rank({"PMI_RANK": "9", "MPI_LOCALRANKID": "1"}) == 9
    assert _ranks.global_rank({"SLURM_PROCID": "33"}) == 33
    assert _ranks.global_rank({"MPI_LOCALRANKID": "1"}) == 1  # only the local rank is known


def test_ranks_spread_round_robin_over_the_devices() -> None:
    chosen = [_ranks.spread(4, "cuda", {"OMPI_COMM_WORLD_LOCAL_RANK": str(r)}, ray_ids=[]) for r in range(8)]
    assert [c[0] for c in chosen if c] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert chosen[5] is not None and "OMPI_COMM_WORLD_LOCAL_RANK" in chosen[5][1]
    assert _ranks.spread(0, "cuda", {"OMPI_COMM_WORLD_LOCAL_RANK": "1"}, ray_ids=[]) is None


def test_ray_ids_map_through_the_visible_devices() -> None:
    # Ray restricted CUDA_VISIBLE_DEVICES to the assigned GPU: the driver calls it device 0
    assert _ranks.ray_device_index("cuda", ["3"], {"CUDA_VISIBLE_DEVICES": "3"}) == 0
    assert _ranks.ray_device_index("cuda", ["5", "6"], {"CUDA_VISIBLE_DEVICES": "4,5,6"}) == 1
    # RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES: every GPU is visible, the id is the index
    assert _ranks.ray_device_index("cuda", ["2"], {}) == 2
    assert _ranks.ray_device_index("amdgpu", ["1"], {"ROCR_VISIBLE_DEVICES": "0,1"}) == 1
    assert _ranks.ray_device_index("cuda", [], {}) is None
    # Ray's id wins over a launcher's local rank on a GPU platform, and is ignored on the host
    env = {"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert _ranks.spread(2, "cuda", env, ray_ids=["1"]) == (1, "Ray's assigned accelerator id")
    assert _ranks.spread(2, "host", env, ray_ids=["1"]) == (0, "local rank 0 from LOCAL_RANK")


def test_ray_is_not_imported_to_ask() -> None:
    import sys

    if "ray" not in sys.modules:
        assert _ranks.ray_accelerator_ids() == []
        assert "ray" not in sys.modules


def test_trace_path_placeholders(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    assert _ranks.expand("rank{rank}.json", {"PMI_RANK": "6"}) == "rank6.json"
    assert _ranks.expand("t-{rank}-{pid}.json", {}) == f"t-{os.getpid()}-{os.getpid()}.json"
    assert _ranks.expand("{other}.json", {"PMI_RANK": "6"}) == "{other}.json"
    from offload._trace.timeline_file import path_from_setting

    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    assert path_from_setting("perfetto:/tmp/x/rank{rank}.json") == "/tmp/x/rank2.json"


def test_default_device_follows_the_local_rank_and_offload_device_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    assert STATE.ctx is None
    try:
        preferred = [d for d in offload.devices() if d.platform is offload.devices()[0].platform]
        for rank in range(2 * len(preferred) + 1):
            monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", str(rank))
            assert offload.default_device() is preferred[rank % len(preferred)]
        monkeypatch.setenv("OFFLOAD_DEVICE", "host:0")
        monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
        assert offload.default_device().id == "host:0"
    finally:
        _session.release()
        while STATE.ctx is not None:
            offload.olShutDown()
