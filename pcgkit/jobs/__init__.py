"""Run the cases in one whole environment (pytest under cellmain, results read back or synthesized), and parity's comparison."""
