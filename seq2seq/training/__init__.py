"""Training: data preparation, loss, schedules, one optimizer step, validation, the bookkeeping
state, the loop (setup -> loop -> cleanup), checkpoint rotation and averaging, DDP helpers,
Ctrl-C/SIGTERM handling, logging."""
