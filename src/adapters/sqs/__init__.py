"""Amazon SQS (FIFO) as the work and reply queues."""
