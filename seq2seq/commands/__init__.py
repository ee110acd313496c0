"""The command implementations that ``seq2seq.cli`` registers, grouped by pipeline stage. An
option's flag is written out only where it is not the parameter's name (``max_steps`` is
``--max-steps``), has a short form, or is a bool (typer would add ``--no-...``)."""
