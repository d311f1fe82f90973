"""Reading what a program does: the devices it runs on (:mod:`.devices`), the
compiled HLO's collectives and loop trip counts (:mod:`.hlo`, text: XLA's
compiled program has no Python structure), the replica groups of either
(:mod:`.groups`), the exported program's StableHLO through jaxlib's MLIR
bindings (:mod:`.stablehlo`) and the traced program's structure (:mod:`.jaxpr`)."""
