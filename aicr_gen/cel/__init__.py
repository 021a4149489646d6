"""CEL (the Common Expression Language) as cel-go implements it: ``syntax.parse`` turns source text into the
``ast`` nodes (cel-spec's ``cel.expr.Expr``), with cel-go's grammar, macros, limits and error texts."""
