"""The buffers and copy lanes of one ordered pair, and the data check.

Cross-device ``dst.copy_(src)`` in torch runs cudaMemcpyAsync on the SOURCE GPU's current stream, after making it wait
for the destination GPU's current stream (and makes that stream wait for the copy). Each lane therefore sets its own
stream on both GPUs for every copy, so the two directions of a bidirectional run never wait for each other.
Buffers are uint8: random 1..255 in the sources, zeros in the destinations before every size, so a copy that did
not happen shows in the check.
"""
from __future__ import annotations

from typing import Any, Callable

from probe_packages.p2p.timing import Lane

CHECK_CHUNK_BYTES = 64 << 20


def cuda_device(torch: Any, index: int) -> Any:
    return torch.device("cuda", index)


def random_source(torch: Any, size_bytes: int, index: int) -> Any:
    return torch.randint(1, 256, (size_bytes,), dtype=torch.uint8, device=cuda_device(torch, index))


def empty_target(torch: Any, size_bytes: int, index: int) -> Any:
    return torch.empty(size_bytes, dtype=torch.uint8, device=cuda_device(torch, index))


def copy_on(torch: Any, copy_stream: Any, peer_stream: Any, target: Any, source: Any) -> Callable[[], Any]:
    """A closure that queues target.copy_(source) on copy_stream (the source GPU's), with peer_stream current on the
    destination GPU for torch's cross-device barrier."""
    def copy() -> None:
        with torch.cuda.stream(peer_stream):
            with torch.cuda.stream(copy_stream):
                target.copy_(source, non_blocking=True)
    return copy


def same_bytes(torch: Any, target: Any, source: Any, chunk_bytes: int = CHECK_CHUNK_BYTES) -> bool:
    """Is every byte of ``target`` equal to ``source``? Compared on the target's GPU, a chunk at a time."""
    if target.numel() != source.numel():
        return False
    for offset in range(0, target.numel(), chunk_bytes):
        part = source[offset:offset + chunk_bytes].to(target.device)
        if not torch.equal(target[offset:offset + chunk_bytes], part):
            return False
    return True


class Direction:
    """One direction's buffers (at the largest size) and its two streams; views of the buffers give smaller sizes."""

    def __init__(self, torch: Any, src: int, dst: int, size_bytes: int) -> None:
        self.torch, self.src, self.dst = torch, src, dst
        self.source = random_source(torch, size_bytes, src)
        self.target = empty_target(torch, size_bytes, dst)
        self.copy_stream = torch.cuda.Stream(device=cuda_device(torch, src))
        self.peer_stream = torch.cuda.Stream(device=cuda_device(torch, dst))

    def lane(self, size_bytes: int) -> Lane:
        if size_bytes > self.source.numel():
            raise ValueError("%d bytes asked of a %d-byte buffer" % (size_bytes, self.source.numel()))
        copy = copy_on(self.torch, self.copy_stream, self.peer_stream, self.target[:size_bytes], self.source[:size_bytes])
        return Lane(self.src, self.copy_stream, copy)

    def clear(self, size_bytes: int) -> None:
        self.target[:size_bytes].zero_()

    def verified(self, size_bytes: int) -> bool:
        return same_bytes(self.torch, self.target[:size_bytes], self.source[:size_bytes])
