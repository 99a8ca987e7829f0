"""The preflight stage: will this SGLang launch crash in piecewise capture on that GPU? Answered from the launch
arguments and the checkpoint's config files alone (never the weights), by tracing what that server would
compile, through the installed release's own parser, quantization resolution and compile wrapper."""
