"""The one reader and the one writer every command uses, one concern a module.

`limits`: the input size limit and `--timeout`'s bound; `reading`: a file or stdin read whole,
bounded; `npz`: an npz archive checked before anything is inflated; `module_input`: a module in
any format (MLIR text or bytecode), binary readers in a child process; `output_file`: a
command's output written without harming its target; `stdout`: stdout that writes everything or
fails; `split_input`: `--split-input-file`'s chunks, cut where mlir-opt cuts.
"""
