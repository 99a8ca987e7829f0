"""The certificate's workshop: what writes fixtures/certificates/inputs/ (the derived inputs of each FlashInfer
release, read by `bin/pcgkit lab certify`). inputs_build.py is the edge (it imports the installed release and
reads a git mirror); upstream_tests.py reads FlashInfer's test sources as syntax (pure)."""
