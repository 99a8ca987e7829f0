"""The end-to-end piecewise launch: a tiny NVFP4 (or bf16 control) checkpoint, the launch command
for the installed SGLang, the server's lifecycle, and the verdict read from its log.

Pure planning lives in `launch` (argv from version facts), `logclass` (verdict from a log) and
`control` (what the bf16 control means for the NVFP4 case); `checkpoint` writes files; `server`
starts the server and talks HTTP. The launch validation (which refreshes the kit's data), the offline GPU
payload and its device-side runner are the workshop's (lab/e2e/).
"""
