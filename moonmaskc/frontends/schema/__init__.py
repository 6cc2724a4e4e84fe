"""JSON Schema front end: compiles a schema (dict) into the shared byte IR."""

from moonmaskc.frontends.schema.compiler import compile_schema_ir
from moonmaskc.frontends.schema.source import load_schema_file

__all__ = ["compile_schema_ir", "load_schema_file"]
