"""The ground floor: plain values every stage reads, and nothing of pcgkit below them.

The evidence a case leaves (signature: the one parser of exceptions and logs; trace: what dynamo did
to a case's function; targets: which hardware a case ran for), the version axes, and the verdict
vocabulary with its legend. Pure: no I/O, no imports from any other pcgkit package.
"""
