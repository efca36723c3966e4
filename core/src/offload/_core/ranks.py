"""Which rank of a distributed job this process is, read from what the launcher set.

One offload process per device is how a job scales out under MPI, Slurm, torchrun or Ray: the
launcher starts one process per device and tells each its rank in environment variables. This
module reads them (never importing an MPI library; Ray only when the process already imported it)
so that ``offload.default_device()`` spreads a node's processes over its devices and the timeline
names each rank.

Local rank (the position among the processes of this node), first found wins:

=============================  ===============================  ============================
launcher                       local rank                       processes on the node
=============================  ===============================  ============================
Open MPI (mpirun, prterun)     ``OMPI_COMM_WORLD_LOCAL_RANK``   ``OMPI_COMM_WORLD_LOCAL_SIZE``
MPICH / Hydra (mpiexec)        ``MPI_LOCALRANKID``              ``MPI_LOCALNRANKS``
PMI launchers (Cray PALS...)   ``PMI_LOCAL_RANK``               ``PMI_LOCAL_SIZE``
Slurm (srun)                   ``SLURM_LOCALID``                ``SLURM_NTASKS_PER_NODE``
torchrun, Ray Train, DeepSpeed ``LOCAL_RANK``                   ``LOCAL_WORLD_SIZE``
=============================  ===============================  ============================

Global rank (for trace file names and process names): ``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``
(MPICH/Hydra and PMI launchers), ``SLURM_PROCID``, ``RANK``.

Ray sets none of these in an actor: it assigns accelerator ids (``ray.get_runtime_context()
.get_accelerator_ids()["GPU"]``, physical ids as strings) and restricts ``CUDA_VISIBLE_DEVICES``
(``ROCR_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` on AMD) to them, so the driver numbers the
assigned GPUs from 0. ``ray_device_index`` maps the first assigned id to that numbering.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LOCAL_RANK_VARIABLES: tuple[tuple[str, str], ...] = (
    ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ("PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"),
    ("SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"),
    ("LOCAL_RANK", "LOCAL_WORLD_SIZE"),
)
RANK_VARIABLES: tuple[str, ...] = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK")
VISIBLE_DEVICES = {"cuda": ("CUDA_VISIBLE_DEVICES",), "amdgpu": ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")}


@dataclass(frozen=True)
class LocalRank:
    """This process's position among the node's processes, and the variable that said so."""

    rank: int
    size: int | None
    variable: str


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def local_rank(env: Mapping[str, str] | None = None) -> LocalRank | None:
    """The local rank the launcher set (None outside a launcher, or when its value is not an int)."""
    env = os.environ if env is None else env
    for rank_var, size_var in LOCAL_RANK_VARIABLES:
        rank = _int(env.get(rank_var))
        if rank is not None:
            size = _int(env.get(size_var))
            return LocalRank(rank, size if size else None, rank_var)
    return None


def global_rank(env: Mapping[str, str] | None = None) -> int | None:
    """The job-wide rank the launcher set, else the local rank, else None."""
    env = os.environ if env is None else env
    for variable in RANK_VARIABLES:
        rank = _int(env.get(variable))
        if rank is not None:
            return rank
    local = local_rank(env)
    return None if local is None else local.rank


def ray_accelerator_ids() -> list[str]:
    """The GPU ids Ray assigned to this worker ([] outside a Ray worker, or without GPUs).

    Ray is consulted only when this process has already imported it and is connected: reading the
    ids never starts Ray or imports it.
    """
    ray: Any = sys.modules.get("ray")
    if ray is None:
        return []
    try:
        if not ray.is_initialized():
            return []
        ids = ray.get_runtime_context().get_accelerator_ids()
    except Exception:  # noqa: BLE001 - an old or half-imported Ray says nothing
        return []
    return [str(i) for i in (ids.get("GPU") or [])]


def ray_device_index(platform: str, ids: Sequence[str], env: Mapping[str, str] | None = None) -> int | None:
    """The driver's index of the first Ray-assigned GPU ``ids[0]`` on ``platform`` (None: no ids).

    Where the platform's visible-devices variable lists the id (Ray set it), the index is its
    position there; otherwise (``RAY_EXPERIMENTAL_NOSET_*``) the physical id itself.
    """
    if not ids:
        return None
    env = os.environ if env is None else env
    first = ids[0].strip()
    for variable in VISIBLE_DEVICES.get(platform, ()):
        listed = [item.strip() for item in env.get(variable, "").split(",") if item.strip()]
        if first in listed:
            return listed.index(first)
    return _int(first)


def spread(count: int, platform: str, env: Mapping[str, str] | None = None, ray_ids: Sequence[str] | None = None) -> tuple[int, str] | None:
    """The index among ``count`` devices of ``platform`` for this process, and why (None: no rank).

    Ray's assigned GPU (for a GPU platform) comes first, then the launcher's local rank modulo
    ``count``: ranks beyond the node's devices share them round-robin.
    """
    if count <= 0:
        return None
    if platform in VISIBLE_DEVICES:
        index = ray_device_index(platform, ray_accelerator_ids() if ray_ids is None else ray_ids, env)
        if index is not None:
            return index % count, "Ray's assigned accelerator id"
    local = local_rank(env)
    if local is None:
        return None
    return local.rank % count, f"local rank {local.rank} from {local.variable}"


def expand(template: str, env: Mapping[str, str] | None = None) -> str:
    """``template`` with ``{rank}`` replaced by the global rank (the pid outside a launcher) and
    ``{pid}`` by the process id; other text (braces included) is kept as it is."""
    rank = global_rank(env)
    pid = str(os.getpid())
    return template.replace("{rank}", pid if rank is None else str(rank)).replace("{pid}", pid)
