"""Independent oracles the tests check the compiler against (never imported by the package)."""
