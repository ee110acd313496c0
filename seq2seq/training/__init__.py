"""Training: a run's setup, loss, schedules, one optimizer update and the reading of its results,
validation, the bookkeeping state and the stop rule, the loop (setup -> loop -> cleanup), the run
folder (resume, checkpoint rotation) and averaging, DDP helpers, Ctrl-C/SIGTERM handling, logging.
The data a run trains on is prepared in ``data.prepare``."""
