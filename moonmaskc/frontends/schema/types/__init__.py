"""One module per JSON instance type: ``numbers``, ``strings`` (with formats), ``arrays`` (with
contains and uniqueItems) and ``objects``. Each takes a cleaned schema with no combinator left and
the walk (``compiler.SchemaWalk``), and hands on the language of the schema's values of its type;
null and booleans need no module (``SchemaWalk.typed``)."""
