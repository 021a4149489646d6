"""The command line: ``main`` (parse, dispatch, error -> exit code, the output guard), ``table`` (the one table of
commands and the argparse tree built from it), ``completion`` (shell scripts from that tree) and ``console`` (the
guard). The commands themselves are ``aicr_gen/commands/``; nothing of aicr_gen imports this package but
``__main__``."""
