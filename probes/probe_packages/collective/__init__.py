"""All-reduce over a message-size sweep: the worker each rank runs, its launcher, and the pure statistics."""
