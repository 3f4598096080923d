"""Half B's `migraphx` dialect on xDSL: the shaped type, layout algebra, shape rules, the ops and
the MIGraphX program importer. The Python API over it is `convcanon.import_program` and
`convcanon.lower_to_tosa` (in `convcanon.migraphx_api`, above the conversion)."""
