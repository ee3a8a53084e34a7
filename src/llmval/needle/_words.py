"""Word lists for the synthetic haystack (written for this suite; no corpus, no licence to track).

Key words (adjectives and nouns of needle keys) and filler words are disjoint, so filler can never
spell a key, and no list holds a digit, so filler can never look like a value.
"""

from __future__ import annotations

KEY_ADJECTIVES = (
    "amber", "ancient", "brave", "brisk", "calm", "clever", "crimson", "curious", "daring", "dusty",
    "eager", "elegant", "fierce", "fragile", "gentle", "gleaming", "golden", "graceful", "hidden", "hollow",
    "humble", "icy", "jolly", "keen", "lively", "lonely", "lucky", "misty", "modest", "noble",
    "odd", "pale", "patient", "proud", "quiet", "rapid", "restless", "rusty", "scarlet", "secret",
    "shy", "silent", "silver", "sleepy", "sly", "smooth", "solemn", "spare", "steady", "stormy",
    "swift", "tame", "tender", "tidy", "velvet", "vivid", "wary", "wild", "witty", "zealous",
)
KEY_NOUNS = (
    "anchor", "badger", "banner", "beacon", "bison", "bramble", "canyon", "castle", "cobra", "comet",
    "compass", "coral", "crane", "dagger", "dolphin", "dragon", "falcon", "feather", "fjord", "galaxy",
    "glacier", "goblet", "harbor", "hazel", "heron", "island", "jaguar", "kettle", "lantern", "lotus",
    "magnet", "marble", "meadow", "mirror", "nebula", "otter", "panther", "parrot", "pebble", "pilgrim",
    "quartz", "raven", "saddle", "scroll", "sphinx", "spindle", "temple", "thistle", "tiger", "trumpet",
    "tulip", "vessel", "violin", "walrus", "willow", "wizard", "yacht", "zebra", "zephyr", "orchard",
)

FILLER_SUBJECTS = (
    "the farmer", "a neighbour", "the old clerk", "my cousin", "the baker", "a traveller", "the teacher",
    "the committee", "our landlord", "a young nurse", "the captain", "the gardener", "a tired student",
    "the mayor", "the shopkeeper", "a quiet poet", "the engineer", "the librarian", "a stranger",
    "the carpenter", "the singer", "a courier", "the doctor", "the fisherman", "the weaver",
)
FILLER_VERBS = (
    "carried", "painted", "described", "repaired", "borrowed", "admired", "counted", "forgot",
    "noticed", "cleaned", "measured", "ordered", "visited", "followed", "sketched", "watered",
    "questioned", "recommended", "moved", "inspected", "opened", "returned", "wrapped", "polished",
)
FILLER_OBJECTS = (
    "the blue door", "a wooden chair", "the long letter", "some bread", "the garden gate", "a paper map",
    "the kitchen table", "an empty basket", "the north window", "a woollen scarf", "the village well",
    "a heavy coat", "the station clock", "a small boat", "the stone bridge", "a bag of apples",
    "the morning paper", "an old piano", "the school bell", "a pair of boots", "the narrow road",
)
FILLER_PLACES = (
    "before lunch", "after the rain", "near the market", "on a grey afternoon", "by the river",
    "during the festival", "behind the church", "at the end of the week", "in the early evening",
    "beside the harbour wall", "under the old bridge", "while the kettle boiled", "without a word",
    "across the square", "in the spring", "at dawn",
)
FILLER_CONNECTIVES = (
    "Later,", "Meanwhile,", "Then", "Afterwards,", "Soon", "Still,", "Once again,", "As usual,",
    "Quietly,", "Eventually,",
)
