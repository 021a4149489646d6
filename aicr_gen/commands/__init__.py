"""The commands: one module per row of ``cli/table.py``, each with ``arguments(parser)`` (its subparser's
arguments, description and subcommands) and ``run(args) -> int`` (the exit code; an ``AicrGenError`` raised is
turned into its message and code by ``cli/main.py``). A module's top level imports only argparse and light things
(building the parser imports it); its run imports the rest. A module named ``_X`` is part of a command, not one.
Nothing here imports ``aicr_gen.cli``."""
