"""openCypher over the logical plan (pure): the syntax tree, the parser, the value semantics and
the compiler to the plan the executor runs (issue 36)."""
