"""precision: what a checkpoint loses in each number format, to explain a format choice."""
