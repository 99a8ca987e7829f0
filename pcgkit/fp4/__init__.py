"""The code under trace and its fixes: SGLang's dense NVFP4 quantize, the custom op, fakes, the reference."""
