"""A stand-in server for the hybrid target's tests: asks the architecture query the way SGLang does (from a
module named sglang.srt.*) and the way Triton does (any other module), calls the method the hybrid skips
once, then prints a recorded server log (argv[1]) and dies, as SGLang 0.5.11 did in piecewise capture."""

import sys
import types

sglang_like = types.ModuleType("sglang.srt.stand_in")
exec("import torch\ndef capability():\n    return torch.cuda.get_device_capability()\n", sglang_like.__dict__)
other = types.ModuleType("triton.stand_in")
exec("import torch\ndef capability():\n    try:\n        return torch.cuda.get_device_capability()\n    except Exception as exc:\n        return repr(exc)[:60]\n", other.__dict__)
print("sglang-like caller got", sglang_like.capability(), flush=True)
print("other caller got", other.capability(), flush=True)
sys.stdout.write(open(sys.argv[1]).read())
sys.exit(1)
