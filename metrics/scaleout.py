"""Sharing a run's bootstrap chunks with other workers, through Redis.

A large run (``METRIC_RUN_SPLIT_CELLS`` resample x cluster x cell products or more) publishes its bootstrap
problem (``metrics.core.bootstrap.Resampling`` arrays, a few MB) and sends helper tasks; the run's own worker
and every helper then take chunks by claiming them one at a time (``SET NX`` with an expiry), so a chunk is
computed once and a helper that never starts (every worker busy) costs nothing: the run's worker takes what
nobody claimed, and after a claim expires without a result it computes that chunk too. Chunk i always uses
seed stream i, so the result is the single-worker result bit for bit, whoever computed which chunk. A claim's
value names who holds the chunk (``owner``), and the connection through which it claims and stores chunks has the
same name in Redis's ``CLIENT LIST`` (``connection_name``): read by people looking at Redis, never compared.

Redis is a help here, never a point of failure: when it cannot be reached (refused, or no answer within
``SOCKET_SECONDS``), the run's own worker computes every chunk it does not hold yet (``compute_shared``; the run's
task computes alone when even the publishing failed) and a helper stops; the result is the same.

Arrays travel as ``np.save`` bytes (exact), never through JSON.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from common.outage import unreachable
from metrics.core.bootstrap import Bootstrap, Resampling
from metrics.core.report import single_blas_thread

log = logging.getLogger(__name__)

TTL_SECONDS = 3600  # everything a split run leaves in Redis expires by itself
SOCKET_SECONDS = 5  # a Redis that does not answer within this long (frozen, its host gone) counts as unreachable


def redis_client(holder: str | None = None):  # noqa: ANN201 - redis is an optional dependency of the web side
    """A connection to the broker's Redis; one that claims chunks is named after its ``holder`` (``connection_name``),
    so that Redis's ``CLIENT LIST`` shows which process each connection is."""
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=SOCKET_SECONDS,
                                socket_connect_timeout=SOCKET_SECONDS,
                                client_name=connection_name(holder) if holder is not None else None)


def redis_unreachable(error: BaseException) -> bool:
    """The error says Redis cannot be reached (common.outage), rather than a bug to raise."""
    return unreachable(error) == "redis"


def split_wanted(boot: Bootstrap) -> bool:
    """Split when the bootstrap is large and there is a broker to share it through (never with eager tasks)."""
    if settings.CELERY_TASK_ALWAYS_EAGER or not str(settings.CELERY_BROKER_URL).startswith(("redis://", "rediss://")):
        return False
    return boot.chunks >= 2 and boot.cells >= settings.METRIC_RUN_SPLIT_CELLS


def _pack(arrays: Sequence[np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, *arrays)
    return buffer.getvalue()


def _unpack(data: bytes) -> list[np.ndarray]:
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        return [archive[f"arr_{i}"] for i in range(len(archive.files))]


@dataclass(frozen=True)
class Problem:
    """What a helper needs to compute any chunk: seed, resamples and the resamplings, under one key prefix."""

    prefix: str
    seed: int
    resamples: int
    requests: list[Resampling]

    def bootstrap(self) -> Bootstrap:
        boot = Bootstrap(seed=self.seed, resamples=self.resamples)
        boot.requests.extend(self.requests)
        return boot


def publish(boot: Bootstrap, *, run_id: int) -> str:
    """Store the problem; returns its key prefix (one per attempt, so a taken-over run never reads stale chunks)."""
    prefix = f"cab:metric-run:{run_id}:{uuid.uuid4().hex}"
    client = redis_client()
    meta = [np.array([boot.seed, boot.resamples, len(boot.requests)], dtype=np.int64)]
    arrays: list[np.ndarray] = []
    for request in boot.requests:
        meta.append(np.array([len(request.arrays), *request.shape], dtype=np.int64))
        arrays.extend(request.arrays)
    names = ",".join(request.statistic for request in boot.requests)
    pipe = client.pipeline()
    pipe.set(f"{prefix}:meta", _pack(meta), ex=TTL_SECONDS)
    pipe.set(f"{prefix}:statistics", names.encode(), ex=TTL_SECONDS)
    pipe.set(f"{prefix}:arrays", _pack(arrays), ex=TTL_SECONDS)
    pipe.execute()
    return prefix


def load(prefix: str) -> Problem | None:
    client = redis_client()
    meta_bytes, names, array_bytes = client.mget(f"{prefix}:meta", f"{prefix}:statistics", f"{prefix}:arrays")
    if meta_bytes is None or names is None or array_bytes is None or client.exists(f"{prefix}:done"):
        return None
    meta, arrays = _unpack(meta_bytes), _unpack(array_bytes)
    seed, resamples, _ = (int(v) for v in meta[0])
    requests, position = [], 0
    for statistic, description in zip(names.decode().split(","), meta[1:], strict=True):
        n_arrays, shape = int(description[0]), tuple(int(v) for v in description[1:])
        requests.append(Resampling(statistic, tuple(arrays[position:position + n_arrays]), shape))
        position += n_arrays
    return Problem(prefix, seed, resamples, requests)


def owner(role: str) -> str:
    """A claim's value: "run" (the run's own worker) or "helper", the host and process, and a tag of this delivery,
    e.g. ``helper worker-2:4182 9f3c01aa``, so that whoever finds a chunk claimed knows which process holds it."""
    return f"{role} {socket.gethostname()}:{os.getpid()} {uuid.uuid4().hex[:8]}"


def connection_name(holder: str) -> str:
    """The name in Redis's ``CLIENT LIST`` of the connection through which ``holder`` (an ``owner``) claims and stores
    chunks: the holder with slashes for its spaces (a connection's name has none), e.g.
    ``helper/worker-2:4182/9f3c01aa``."""
    return holder.replace(" ", "/")


def _claim(client, prefix: str, chunk: int, holder: str) -> bool:  # noqa: ANN001
    return bool(client.set(f"{prefix}:claim:{chunk}", holder, nx=True, ex=settings.METRIC_RUN_CHUNK_CLAIM_SECONDS))


def help_with(prefix: str, *, on_chunk: Callable[[], None] | None = None) -> int:
    """A helper's part: claim and compute chunks until none is left; returns how many it computed."""
    problem = load(prefix)
    if problem is None:
        return 0
    single_blas_thread()  # as the run's own worker computes its chunks: the same bits whoever computes a chunk
    boot, helper, done = problem.bootstrap(), owner("helper"), 0
    client = redis_client(helper)
    try:
        for chunk in range(boot.chunks):
            if client.exists(f"{prefix}:done"):
                break
            if not _claim(client, prefix, chunk, helper):
                continue
            client.set(f"{prefix}:chunk:{chunk}", _pack(boot.chunk_samples(chunk)), ex=TTL_SECONDS)
            done += 1
            if on_chunk is not None:
                on_chunk()
    except Exception as error:
        if not redis_unreachable(error):
            raise
        # what it claimed is computed by the run's own worker: when the claim expires, or at once without Redis
        log.warning("bootstrap helper of %s: Redis cannot be reached (%s); stopping", prefix, type(error).__name__)
    return done


def compute_shared(
    boot: Bootstrap, prefix: str, *, progress: Callable[[int, int, int], None] | None = None,
    poll_seconds: float = 0.05,
) -> list[list[np.ndarray]]:
    """The run's own worker: take every chunk nobody claimed, then collect the helpers' chunks (computing any
    whose claim expired without a result); when Redis cannot be reached, compute every chunk not collected yet.
    ``progress(done, total, by_helpers)`` after each chunk."""
    own = owner("run")
    client = redis_client(own)
    results: dict[int, list[np.ndarray]] = {}
    by_helpers: set[int] = set()

    def report() -> None:
        if progress is not None:
            progress(len(results), boot.chunks, len(by_helpers))

    try:
        _share(client, own, boot, prefix, results, by_helpers, report=report, poll_seconds=poll_seconds)
    except Exception as error:
        if not redis_unreachable(error):
            raise
        left = [chunk for chunk in range(boot.chunks) if chunk not in results]
        log.warning("bootstrap of %s: Redis cannot be reached (%s); computing the %s chunks left here", prefix,
                    type(error).__name__, len(left))
        for chunk in left:
            results[chunk] = boot.chunk_samples(chunk)
            report()
    finally:
        _let_go(client, prefix, boot.chunks)
    return [results[c] for c in range(boot.chunks)]


def _share(client, own: str, boot: Bootstrap, prefix: str,  # noqa: ANN001
           results: dict[int, list[np.ndarray]], by_helpers: set[int], *, report: Callable[[], None],
           poll_seconds: float) -> None:
    """Fill ``results`` with every chunk: those this worker (``own``) claims, computed here, and the helpers' (their
    chunks in ``by_helpers``)."""
    for chunk in range(boot.chunks):
        if _claim(client, prefix, chunk, own):
            results[chunk] = boot.chunk_samples(chunk)
            report()
    while len(results) < boot.chunks:
        waiting = [c for c in range(boot.chunks) if c not in results]
        found = client.mget([f"{prefix}:chunk:{c}" for c in waiting])
        progressed = False
        for chunk, data in zip(waiting, found, strict=True):
            if data is not None:
                results[chunk] = _unpack(data)
                by_helpers.add(chunk)
                progressed = True
            elif _claim(client, prefix, chunk, own):  # its helper died: the claim expired without a result
                log.warning("bootstrap chunk %s of %s: its helper stopped; computing it here", chunk, prefix)
                results[chunk] = boot.chunk_samples(chunk)
                progressed = True
        if progressed:
            report()
        else:
            time.sleep(poll_seconds)


def _let_go(client, prefix: str, chunks: int) -> None:  # noqa: ANN001
    """Done or failed: helpers stop taking chunks, and the arrays go (when Redis cannot be reached, they expire
    with ``TTL_SECONDS``)."""
    pipe = client.pipeline()
    pipe.set(f"{prefix}:done", b"1", ex=TTL_SECONDS)
    pipe.delete(f"{prefix}:arrays", *(f"{prefix}:chunk:{c}" for c in range(chunks)))
    try:
        pipe.execute()
    except Exception as error:
        if not redis_unreachable(error):
            raise
