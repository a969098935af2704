"""The ``epochal`` command: every subcommand's argument parsing and output, in one place."""
