"""JSON Schema front end: compiles a schema (dict) into the shared byte IR."""
