"""The queue consumer: the worker loop and its health probe."""
