"""Training: loss, schedules, one optimizer step, validation, the loop (setup -> loop -> cleanup),
checkpoint averaging, DDP helpers, logging."""
