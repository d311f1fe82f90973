"""Reading what a program does: the devices it runs on (:mod:`.devices`), the
compiled HLO's collectives, replica groups and loop trip counts (:mod:`.hlo`),
and the traced program's structure (:mod:`.jaxpr`)."""
