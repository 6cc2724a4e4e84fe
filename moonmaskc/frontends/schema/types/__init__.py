"""One module per JSON instance type: ``numbers``, ``strings`` (with formats), ``arrays`` (with
contains and uniqueItems) and ``objects``. Each takes the typed record of a schema's keywords of its
type (``typed``, built by ``normalize``) and the walk (``compiler.SchemaWalk``), and hands on the
language of the schema's values of that type; null and booleans need no module
(``SchemaWalk.typed``)."""
