"""The Git edge of ``sync``: trees put at their paths as exactly one commit (``sync``), journaled (``journal``),
the index and work tree settled (``settle``) and the branch advanced as git guards a ref (``advance``)."""
