"""The p2p probe's library: plan and sizing, pairs and their links, timing behind a spin, the per-pair runner, matrices."""
