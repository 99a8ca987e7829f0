"""The end-to-end piecewise launch (issue 5, part B): a tiny NVFP4 checkpoint, the launch command
for the installed SGLang, the server's lifecycle, and the verdict read from its log.

Pure planning lives in `launch` (argv from version facts) and `logclass` (verdict from a log);
`checkpoint` writes files; `server` is the only module here that starts processes (through
pcgkit.util.proc) or talks HTTP.
"""
