"""Make the sample corpus that ships with this project: data/sample.csv.

The trainer needs some English to learn from before a person brings text of
their own.  This script writes that English itself, from hand-written word
lists and sentence patterns, so the corpus belongs to the project, stays
small, and can be read and changed by anyone.  Every row is one to three
short sentences about a small village world: people at work, animals, food,
weather, little talks between friends, short stories about a cast of
recurring characters, and simple facts ("A week has seven days.").

The file has one column, `text`, written with the csv module.  The trainer
keeps the first 2,000 rows, so the script writes a few more than that and
makes sure the first 2,000 alone hold enough text.

Regenerate it with:

    python data/make_sample.py            # writes data/sample.csv
    python data/make_sample.py OUT.csv    # writes somewhere else

Only the standard library is used.  All randomness comes from one seeded
random.Random, and the script never iterates over a set or relies on hash
order, so every run writes a byte-identical file.  At the end it prints the
row count, character count, distinct word count and sha256 of that file.
"""

import csv
import hashlib
import random
import re
import sys
from pathlib import Path
from typing import NamedTuple

SEED = 20240611          # change it and the whole corpus changes
N_ROWS = 2200            # the trainer keeps the first 2,000 rows
MIN_ROW_CHARS = 62       # shorter rows get one more sentence, to keep the average near 85
MAX_SENTENCES = 3        # each row is one to three sentences
OUT_PATH = Path(__file__).resolve().parent / "sample.csv"


def words(text):
    """Split a block of space-separated words into a list (lists keep their order; sets would not)."""
    return text.split()


# --------------------------------------------------------------------------
# Grammar helpers: articles, plurals, verb endings, numbers.
# --------------------------------------------------------------------------

# "an hour" but "a useful tool": the first sound matters, not the first letter.
AN_BEFORE = ("hour", "honest", "honor")
A_BEFORE = ("one", "once", "uni", "use", "usu", "eu", "ewe")

IRREGULAR_PLURALS = {
    "child": "children", "man": "men", "woman": "women", "person": "people",
    "fisherman": "fishermen", "mouse": "mice", "goose": "geese", "foot": "feet",
    "tooth": "teeth", "sheep": "sheep", "deer": "deer", "fish": "fish",
    "wolf": "wolves", "calf": "calves", "knife": "knives", "leaf": "leaves",
    "loaf": "loaves", "shelf": "shelves", "scarf": "scarves", "potato": "potatoes",
    "tomato": "tomatoes", "ox": "oxen",
}


def a(phrase):
    """Put 'a' or 'an' in front of a phrase, by the sound of its first word."""
    low = phrase.lower()
    if low.startswith(AN_BEFORE):
        return "an " + phrase
    if low.startswith(A_BEFORE):
        return "a " + phrase
    return ("an " if low[0] in "aeiou" else "a ") + phrase


def plural(noun):
    """'fox' -> 'foxes', 'berry' -> 'berries', 'watering can' -> 'watering cans'."""
    head, space, last = noun.rpartition(" ")
    if last in IRREGULAR_PLURALS:
        last = IRREGULAR_PLURALS[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and last[-2] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return head + space + last


def third_person(verb):
    """'carry' -> 'carries', 'pick up' -> 'picks up' (only the first word changes)."""
    first, space, rest = verb.partition(" ")
    if first == "have":
        first = "has"
    elif first.endswith(("s", "x", "z", "ch", "sh", "o")):
        first += "es"
    elif first.endswith("y") and first[-2] not in "aeiou":
        first = first[:-1] + "ies"
    else:
        first += "s"
    return first + space + rest


ONES = words("zero one two three four five six seven eight nine ten eleven twelve "
             "thirteen fourteen fifteen sixteen seventeen eighteen nineteen")
TENS = words("_ _ twenty thirty forty fifty sixty seventy eighty ninety")


def number_word(n):
    """0..100 as words: 42 -> 'forty-two'."""
    if n < 20:
        return ONES[n]
    if n == 100:
        return "one hundred"
    tens, ones = divmod(n, 10)
    return TENS[tens] + ("-" + ONES[ones] if ones else "")


def cap(sentence):
    """Capitalize the first letter and leave the rest alone (names stay as they are)."""
    return sentence[:1].upper() + sentence[1:]


def join_list(items):
    """['a', 'b', 'c'] -> 'a, b and c'."""
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " and " + items[-1]


def count_of(rng, noun, low=2, high=9):
    """'three apples'; small numbers, because this is a small world."""
    return number_word(rng.randint(low, high)) + " " + plural(noun)


# --------------------------------------------------------------------------
# People.  A Person carries the pronouns that later sentences need.
# --------------------------------------------------------------------------

class Person(NamedTuple):
    name: str      # "Mira", "the baker", "Mira and Tom", "the children"
    subj: str      # she / he / they
    obj: str       # her / him / them
    poss: str      # her / his / their
    plural: bool   # decides "plays" or "play", "was" or "were"


# The recurring cast (Mira, Tom, Ada, ...) is further down; these names are
# everyone else, kept apart so a sentence never gives a cast member a new job.
SHE_NAMES = words("Ivy Lena Maya Zoe Juno Priya Iris Tess Clara Elsa Greta Hana Lola Noor "
                  "Pia Wren Beth Dora Fern Gina Kira Lucy Nell Olga Ruth Sara Uma Vera")
HE_NAMES = words("Sam Omar Ben Ezra Felix Otto Ravi Jonas Amir Dev Finn Kai Max Oskar "
                 "Abel Carl Dan Eli Gus Hal Ian Jack Luis Ned Paul Raj Seth Theo Victor")
ROLES = words("farmer baker teacher doctor sailor painter fisherman nurse pilot driver "
              "builder gardener tailor miller cook singer writer student neighbor "
              "shepherd potter weaver carpenter librarian mechanic ranger guard clerk "
              "musician dancer shopkeeper beekeeper blacksmith stranger traveler visitor")
GROUPS = ["the children", "the twins", "the neighbors", "the farmers", "the students",
          "the sailors", "the old friends", "the girls", "the boys", "the cousins",
          "the two sisters", "the three brothers"]
SHE_RELATIVES = words("mother sister grandmother aunt cousin friend neighbor")
HE_RELATIVES = words("father brother grandfather uncle cousin friend neighbor")


def named(rng):
    if rng.random() < 0.5:
        return Person(rng.choice(SHE_NAMES), "she", "her", "her", False)
    return Person(rng.choice(HE_NAMES), "he", "him", "his", False)


def someone(rng):
    """Any subject: mostly a named person, sometimes a role, a pair or a group."""
    roll = rng.random()
    if roll < 0.6:
        return named(rng)
    if roll < 0.78:
        role = "the " + rng.choice(ROLES)
        if rng.random() < 0.5:
            return Person(role, "she", "her", "her", False)
        return Person(role, "he", "him", "his", False)
    if roll < 0.9:
        first, second = named(rng), named(rng)
        while second.name == first.name:
            second = named(rng)
        return Person(first.name + " and " + second.name, "they", "them", "their", True)
    return Person(rng.choice(GROUPS), "they", "them", "their", True)


def other_person(rng, who):
    """Someone for `who` to meet, help or visit: never `who` again."""
    roll = rng.random()
    if roll < 0.5:
        other = named(rng)
        while other.name in who.name:
            other = named(rng)
        return other.name
    if roll < 0.75:
        relatives = rng.choice([SHE_RELATIVES, HE_RELATIVES])
        return who.poss + " " + rng.choice(relatives)
    return rng.choice(["the " + rng.choice(ROLES), "an old friend", "the new neighbor",
                       "the old " + rng.choice(ROLES)])


def present(who, verb):
    """Present tense that agrees with the subject: 'Mira bakes', 'the twins bake'."""
    return verb if who.plural else third_person(verb)


def was(who):
    return "were" if who.plural else "was"


# --------------------------------------------------------------------------
# Things.  Each list is a kind of thing; verbs below only take kinds they fit.
# --------------------------------------------------------------------------

COLORS = words("red blue green yellow brown black white gray purple pink orange")
SIZES = words("small big little tiny large")
THINGS = words("book letter map key box cup bowl plate blanket basket lantern ball kite "
               "bell clock lamp candle stone shell feather stick pebble coin ring button "
               "mirror pillow jar bottle umbrella pencil notebook photo sock glove hat "
               "bucket rope brush spoon kettle parcel ticket wallet bag purse sack "
               "whistle marble toy doll puzzle envelope ribbon comb towel apron compass "
               "telescope")
THING_ADJS = COLORS + SIZES + words("old new heavy dusty")
CLOTHES = words("coat hat scarf sweater dress shirt jacket apron cap belt cloak vest "
                "skirt raincoat shawl")
CLOTHES_ADJS = words("warm woolen old new blue red green yellow striped spotted clean")
READING = words("book letter map note story poem newspaper recipe list sign postcard "
                "diary label")
INSTRUMENTS = words("fiddle flute drum piano guitar harp horn trumpet accordion banjo "
                    "cello violin harmonica")
GAMES = ["cards", "chess", "tag", "checkers", "marbles", "dominoes", "hide-and-seek",
         "hopscotch", "a board game", "a guessing game"]
FIXABLE = words("fence gate chair table door window roof wheel cart clock lamp bicycle "
                "shelf wagon boat bench ladder stool cupboard drawer tap")
FIXABLE_ADJS = words("broken old creaky wobbly squeaky loose bent cracked")
BUILDABLE = ["a birdhouse", "a raft", "a bench", "a new fence", "a shed", "a stone wall",
             "a bookcase", "a treehouse", "a doghouse", "a little bridge over the stream",
             "a wooden cart", "a sandcastle", "a chicken coop", "a set of shelves"]
FLOWERS = words("daisy rose tulip poppy lily violet sunflower bluebell daffodil marigold "
                "buttercup")
SEEDS = ["beans", "peas", "carrots", "onions", "potatoes", "tulips", "sunflowers",
         "herbs", "lettuce", "an apple tree", "a row of beans", "a pear tree",
         "some roses", "pumpkins"]
FRUITS = words("apple pear plum peach apricot cherry orange banana fig "
               "strawberry raspberry blueberry melon grape")
TREE_FRUITS = words("apple pear plum peach apricot cherry")   # what grows in the orchard
FRUIT_ADJS = words("fresh ripe juicy sweet big small")
VEGETABLES = words("carrot potato onion turnip cabbage cucumber tomato pumpkin mushroom "
                   "radish beet pepper leek")
VEG_ADJS = words("fresh big small muddy crisp")
PEELABLE = words("potato carrot onion turnip beet cucumber")
BAKED = words("cake pie cookie bun muffin tart biscuit pretzel scone pancake")
BAKED_ADJS = words("warm fresh sweet homemade golden little")
PIE_FILLINGS = words("apple cherry plum pear pumpkin berry lemon")
DISHES = words("bread soup rice honey jam cheese porridge salad stew toast pasta "
               "yogurt popcorn pudding oatmeal")   # things you have "some" of
DISH_ADJS = words("warm fresh tasty homemade hot simple")
POTS = words("soup stew porridge rice beans")          # things cooked in a pot
BOWL_DISHES = words("soup rice porridge stew salad pasta oatmeal yogurt popcorn pudding")
DRINKS = [("tea", "cup"), ("coffee", "mug"), ("cocoa", "mug"), ("milk", "glass"),
          ("juice", "glass"), ("water", "glass"), ("lemonade", "glass"), ("cider", "glass"),
          ("broth", "bowl")]
FARM_ANIMALS = words("cow horse pig goat sheep hen duck goose donkey pony lamb calf "
                     "rabbit dog cat")
FARM_ANIMAL_ADJS = words("old young brown white black spotted hungry noisy gentle "
                         "stubborn little")
WILD_ANIMALS = words("fox deer badger hedgehog otter squirrel owl heron hare mole crow "
                     "swan frog lizard beetle butterfly moth")
WILD_ANIMAL_ADJS = words("young red gray shy little quick curious")
SWEEPABLE = words("kitchen porch yard hallway floor steps shop barn attic stable path")
CONTAINERS = [("bucket", "water"), ("basket", "apples"), ("jar", "honey"),
              ("kettle", "water"), ("watering can", "water"), ("sack", "flour"),
              ("bowl", "cherries"), ("box", "old letters"), ("cart", "hay"),
              ("bottle", "milk"), ("tin", "cookies"), ("wheelbarrow", "stones")]
FURNITURE = ["under the bed", "on the shelf", "behind the door", "in the drawer",
             "next to the lamp", "by the window", "on the kitchen table",
             "in the basket", "under the stairs", "on the hook by the door",
             "in the pocket of your coat", "behind the sofa", "in the garden shed",
             "on top of the cupboard"]


def owned(who, noun):
    """What a subject owns agrees with it: 'her kite', 'their kites'."""
    return who.poss + " " + (plural(noun) if who.plural else noun)


def thing(rng, who):
    """A portable thing: 'the red kite', 'a lantern', 'her old map'."""
    noun = rng.choice(THINGS)
    adj = rng.choice(THING_ADJS) + " " if rng.random() < 0.5 else ""
    form = rng.random()
    if form < 0.35:
        return "the " + adj + noun
    if form < 0.7:
        return a(adj + noun)
    return owned(who, adj + noun)


def clothing(rng, who):
    noun = rng.choice(CLOTHES)
    adj = rng.choice(CLOTHES_ADJS)
    return rng.choice([owned(who, adj + " " + noun), a(adj + " " + noun),
                       "the " + adj + " " + noun,
                       owned(who, rng.choice(["best", "favorite"]) + " " + noun)])


def reading(rng, who):
    noun = rng.choice(READING)
    return rng.choice(["the " + noun, a(noun), owned(who, noun),
                       "an old " + noun, "the new " + noun])


def writing(rng, who):
    """Things a person can write, some with a topic so the model sees 'about'."""
    topic = rng.choice([a(rng.choice(WILD_ANIMALS)), "the sea", "the " + rng.choice(SEASONS),
                        "a lost " + rng.choice(THINGS), "the old mill", "the rain",
                        "a brave " + rng.choice(FARM_ANIMALS)])
    return rng.choice(["a letter to " + who.poss + " " + rng.choice(SHE_RELATIVES + HE_RELATIVES),
                       "a short poem about " + topic, "a story about " + topic,
                       "a song about " + topic, "a shopping list", "a note for the milkman",
                       "a postcard to an old friend", "a recipe for " + rng.choice(POTS[:3])])


def playable(rng, who):
    if rng.random() < 0.5:
        return rng.choice(GAMES)
    return rng.choice(["the ", who.poss + " ", "the old "]) + rng.choice(INSTRUMENTS)


def fixable(rng, who):
    noun = rng.choice(FIXABLE)
    return rng.choice(["the " + rng.choice(FIXABLE_ADJS) + " " + noun,
                       owned(who, rng.choice(FIXABLE_ADJS) + " " + noun),
                       "the " + noun])


def paintable(rng, who):
    """'the gate green': painting takes a color after the thing."""
    return "the " + rng.choice(FIXABLE) + " " + rng.choice(COLORS)


def buildable(rng, who):
    return rng.choice(BUILDABLE)


def food(rng, who):
    """Something to eat: fruit, something baked, or a dish you have 'some' of."""
    kind = rng.random()
    if kind < 0.35:
        fruit = rng.choice(FRUITS)
        return rng.choice([a(fruit), a(rng.choice(FRUIT_ADJS) + " " + fruit),
                           count_of(rng, fruit, 2, 6), "some " + plural(fruit)])
    if kind < 0.65:
        baked = rng.choice(BAKED)
        return rng.choice([a(baked), a(rng.choice(BAKED_ADJS) + " " + baked),
                           "two " + plural(baked), "a plate of " + plural(baked)])
    dish = rng.choice(DISHES)
    helping = "a bowl of " if dish in BOWL_DISHES else "a little "
    return rng.choice(["some " + dish, "some " + rng.choice(DISH_ADJS) + " " + dish, helping + dish])


def bakeable(rng, who):
    baked = rng.choice(BAKED)
    return rng.choice([a(baked), "some " + plural(baked), count_of(rng, baked, 2, 12),
                       a(rng.choice(PIE_FILLINGS) + " pie"), "bread",
                       "two loaves of bread", a(rng.choice(PIE_FILLINGS) + " tart")])


def cookable(rng, who):
    return rng.choice(["a pot of " + rng.choice(POTS), "some " + rng.choice(POTS),
                       "an omelet", "pancakes", "a big pot of stew", "rice and beans",
                       "fish for supper", "eggs for breakfast", "a simple supper"])


def vegetable(rng, who, choices=VEGETABLES):
    veg = rng.choice(choices)
    return rng.choice(["the " + plural(veg), a(veg), count_of(rng, veg, 2, 6),
                       a(rng.choice(VEG_ADJS) + " " + veg)])


def peelable(rng, who):
    return vegetable(rng, who, PEELABLE)


def pickable(rng, who):
    if rng.random() < 0.5:
        fruit = rng.choice(TREE_FRUITS)
        return rng.choice(["some " + plural(fruit), "a basket of " + plural(fruit),
                           "the ripe " + plural(fruit)])
    flower = rng.choice(FLOWERS)
    return rng.choice(["some " + plural(flower), "a bunch of " + plural(flower),
                       a(flower) + " for " + who.poss + " hair"])


HOT_DRINKS = words("tea coffee cocoa milk broth")


def drink(rng, who):
    name, vessel = rng.choice(DRINKS)
    warmth = "hot " if name in HOT_DRINKS else "cold "
    return rng.choice([a(vessel) + " of " + name, "some " + name, a(vessel) + " of " + warmth + name])


def farm_animal(rng, who):
    animal = rng.choice(FARM_ANIMALS)
    return rng.choice(["the " + plural(animal), "the " + rng.choice(FARM_ANIMAL_ADJS) + " " + animal,
                       owned(who, animal), "the " + animal])


def wild_animal(rng, who):
    animal = rng.choice(WILD_ANIMALS)
    return rng.choice([a(animal), a(rng.choice(WILD_ANIMAL_ADJS) + " " + animal),
                       count_of(rng, animal, 2, 5), "the " + animal])


def person_object(rng, who):
    return other_person(rng, who)


def sweepable(rng, who):
    return "the " + rng.choice(SWEEPABLE)


def plantable(rng, who):
    return rng.choice(SEEDS)


def fillable(rng, who):
    container, stuff = rng.choice(CONTAINERS)
    return "the " + container + " with " + stuff


def throwable(rng, who):
    return rng.choice(["the ball", "a red ball", "a small stone", "a stick for the dog",
                       "a snowball", "a pebble into the pond", "the ball over the fence"])


# --------------------------------------------------------------------------
# Places and times.
# --------------------------------------------------------------------------

PLACES_INDOOR = [("in", "kitchen"), ("in", "library"), ("in", "attic"), ("in", "cellar"),
                 ("in", "barn"), ("in", "shop"), ("in", "bakery"), ("in", "hall"),
                 ("in", "workshop"), ("at", "school"), ("at", "inn"), ("in", "classroom"),
                 ("in", "shed"), ("in", "greenhouse"), ("in", "post office")]
PLACES_TOWN = [("at", "market"), ("in", "square"), ("at", "harbor"), ("at", "station"),
               ("in", "park"), ("on", "beach"), ("on", "road"), ("on", "bridge"),
               ("in", "village"), ("in", "town"), ("on", "main street"), ("by", "well")]
PLACES_WILD = [("in", "forest"), ("on", "hill"), ("in", "field"), ("in", "meadow"),
               ("in", "orchard"), ("in", "valley"), ("by", "river"), ("by", "lake"),
               ("by", "pond"), ("in", "garden"), ("on", "island"),
               ("by", "stream"), ("on", "mountain"), ("in", "woods")]
ALL_PLACES = PLACES_INDOOR + PLACES_TOWN + PLACES_WILD
# Smaller sets, so that each verb only happens where it makes sense.
AT_HOME = [("in", "kitchen"), ("by", "fire"), ("at", "table"), ("on", "porch")]
FOR_READING = AT_HOME + [("in", "library"), ("in", "classroom"), ("in", "attic"), ("in", "garden")]
FOR_EATING = AT_HOME + [("in", "garden"), ("in", "park"), ("on", "beach"), ("at", "inn"),
                        ("in", "orchard"), ("on", "hill")]
FOR_SHOPPING = [("at", "market"), ("in", "shop"), ("in", "village"), ("in", "town"),
                ("at", "bakery")]
FOR_PICKING = [("in", "garden"), ("in", "orchard"), ("in", "meadow"), ("by", "gate")]
ON_THE_FARM = [("in", "barn"), ("in", "yard"), ("in", "field"), ("in", "stable"),
               ("on", "farm")]
WATER = [("in", "river"), ("in", "lake"), ("in", "pond"), ("in", "sea")]
FOR_SLEEPING = [("in", "attic"), ("by", "fire"), ("on", "porch"), ("in", "barn")]
OUTDOORS = PLACES_TOWN + PLACES_WILD
# A place gets one word from each half of its pair, so it is never "quiet and noisy".
INDOOR_ADJS = (words("quiet noisy busy crowded empty"),
               words("warm cold dark bright tidy messy dusty cozy clean"))
TOWN_ADJS = (words("quiet busy noisy crowded empty peaceful"), words("sunny windy wet cold muddy"))
WILD_ADJS = (words("quiet peaceful still"), words("green muddy sunny shady windy cold warm wet misty"))

DAYS = words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
MONTHS = words("January February March April May June July August September October "
               "November December")
SEASONS = words("spring summer autumn winter")
PARTS_OF_DAY = ["in the morning", "in the afternoon", "in the evening", "at night",
                "at dawn", "at dusk", "at noon", "before breakfast", "after lunch",
                "after supper", "after school"]


def place(rng, places=ALL_PLACES):
    """'in the kitchen', 'by the river': a preposition and a place from `places`."""
    prep, noun = rng.choice(places)
    return prep + " the " + noun


def time_past(rng):
    """When something happened."""
    return rng.choice(["yesterday", "last night", "this morning", "that afternoon",
                       "on " + rng.choice(DAYS), "last " + rng.choice(DAYS),
                       "on " + rng.choice(DAYS) + " " + rng.choice(["morning", "evening"]),
                       "last " + rng.choice(SEASONS), "in " + rng.choice(MONTHS),
                       number_word(rng.randint(2, 6)) + " days ago", "one " +
                       rng.choice(["cold", "warm", "rainy", "quiet", "bright"]) + " " +
                       rng.choice(["morning", "evening", "day", "night"])]
                      + PARTS_OF_DAY)


def time_habit(rng):
    """How often something happens."""
    return rng.choice(["every morning", "every day", "each evening", "on " + plural(rng.choice(DAYS)),
                       "every " + rng.choice(SEASONS), "twice a week", "after school",
                       "before breakfast", "every " + rng.choice(DAYS), "once a month",
                       "on rainy days", "on sunny afternoons", "at the end of each week"])


def with_time(rng, clause, when):
    """Put the time before the clause (with a comma) or after it."""
    if rng.random() < 0.5:
        return cap(when) + ", " + clause
    return clause + " " + when


# --------------------------------------------------------------------------
# Verbs.  (base, past, object maker, places or None): the maker only gives
# things the verb fits, and the places are where it can sensibly happen.
# --------------------------------------------------------------------------

TRANSITIVE = [
    ("carry", "carried", thing, None), ("find", "found", thing, OUTDOORS),
    ("lose", "lost", thing, OUTDOORS), ("drop", "dropped", thing, OUTDOORS),
    ("buy", "bought", thing, FOR_SHOPPING), ("sell", "sold", thing, FOR_SHOPPING),
    ("hide", "hid", thing, PLACES_INDOOR), ("bring", "brought", thing, None),
    ("give away", "gave away", thing, None), ("borrow", "borrowed", thing, None),
    ("pick up", "picked up", thing, OUTDOORS), ("pack", "packed", thing, None),
    ("wrap", "wrapped", thing, None), ("fetch", "fetched", thing, None),
    ("wear", "wore", clothing, None), ("fold", "folded", clothing, None),
    ("wash", "washed", clothing, None), ("mend", "mended", clothing, AT_HOME),
    ("iron", "ironed", clothing, None), ("buy", "bought", clothing, FOR_SHOPPING),
    ("read", "read", reading, FOR_READING), ("write", "wrote", writing, FOR_READING),
    ("play", "played", playable, AT_HOME),
    ("fix", "fixed", fixable, None), ("repair", "repaired", fixable, None),
    ("paint", "painted", paintable, None),
    ("build", "built", buildable, None), ("make", "made", buildable, None),
    ("eat", "ate", food, FOR_EATING), ("share", "shared", food, FOR_EATING),
    ("taste", "tasted", food, FOR_EATING), ("buy", "bought", food, FOR_SHOPPING),
    ("bake", "baked", bakeable, [("in", "kitchen"), ("at", "bakery")]),
    ("cook", "cooked", cookable, [("in", "kitchen")]), ("make", "made", cookable, None),
    ("chop", "chopped", vegetable, [("in", "kitchen")]),
    ("peel", "peeled", peelable, [("in", "kitchen")]), ("wash", "washed", vegetable, None),
    ("pick", "picked", pickable, FOR_PICKING), ("plant", "planted", plantable, FOR_PICKING),
    ("drink", "drank", drink, FOR_EATING),
    ("pour", "poured", drink, AT_HOME),
    ("feed", "fed", farm_animal, ON_THE_FARM), ("brush", "brushed", farm_animal, ON_THE_FARM),
    ("call", "called", farm_animal, None),
    ("watch", "watched", wild_animal, PLACES_WILD), ("see", "saw", wild_animal, PLACES_WILD),
    ("follow", "followed", wild_animal, PLACES_WILD), ("draw", "drew", wild_animal, PLACES_WILD),
    ("spot", "spotted", wild_animal, PLACES_WILD),
    ("help", "helped", person_object, None), ("visit", "visited", person_object, None),
    ("meet", "met", person_object, PLACES_TOWN), ("thank", "thanked", person_object, None),
    ("hug", "hugged", person_object, None), ("wait for", "waited for", person_object, PLACES_TOWN),
    ("write to", "wrote to", person_object, None), ("look for", "looked for", person_object, OUTDOORS),
    ("sweep", "swept", sweepable, None), ("clean", "cleaned", sweepable, None),
    ("tidy", "tidied", sweepable, None),
    ("fill", "filled", fillable, None), ("throw", "threw", throwable, None),
]

# Verbs with no object: (base, past, comma-separated adverbs that suit it, places or None),
# so "slept soundly in the attic" can come out, but never "slept loudly" or "swam in the kitchen".
INTRANSITIVE = [
    ("laugh", "laughed", "loudly, softly, happily", ALL_PLACES),
    ("smile", "smiled", "warmly, shyly, kindly", None),
    ("sing", "sang", "softly, loudly, sweetly", ALL_PLACES),
    ("dance", "danced", "happily, wildly, slowly", AT_HOME + PLACES_TOWN),
    ("swim", "swam", "slowly, quickly", WATER), ("run", "ran", "quickly, fast", OUTDOORS),
    ("walk", "walked", "slowly, quickly", OUTDOORS),
    ("sleep", "slept", "soundly, deeply, peacefully", FOR_SLEEPING),
    ("rest", "rested", "quietly", ALL_PLACES), ("wait", "waited", "patiently, quietly", PLACES_TOWN),
    ("work", "worked", "hard, busily", ALL_PLACES), ("shout", "shouted", "loudly, angrily", None),
    ("whisper", "whispered", "softly, quietly", None), ("cry", "cried", "quietly", None),
    ("wave", "waved", "cheerfully", None), ("hum", "hummed", "softly, happily", None),
    ("whistle", "whistled", "cheerfully, loudly", OUTDOORS), ("hurry", "hurried", "home", None),
    ("wander", "wandered", "slowly", OUTDOORS),
    ("climb the stairs", "climbed the stairs", "carefully, slowly", None),
    ("jump", "jumped", "high", None),
    ("listen to the radio", "listened to the radio", "carefully, closely", AT_HOME),
    ("read", "read", "quietly", FOR_READING), ("cook", "cooked", "carefully", None),
    ("knit", "knitted", "quietly", AT_HOME), ("yawn", "yawned", "sleepily", None),
    ("sneeze", "sneezed", "loudly", None), ("giggle", "giggled", "quietly", None),
    ("think", "thought", "hard", None), ("nod", "nodded", "slowly", None),
    ("shiver", "shivered", "in the cold", None), ("sit down", "sat down", "slowly", ALL_PLACES),
    ("stand up", "stood up", "slowly, quickly", None), ("wake up", "woke up", "early, late", None),
    ("go home", "went home", "early, late", None), ("come back", "came back", "later, soon", None),
    ("fall asleep", "fell asleep", "quickly", FOR_SLEEPING),
    ("look around", "looked around", "carefully", OUTDOORS),
]


def with_place(rng, phrase, places, chance=0.5):
    """Sometimes add where it happened, if the verb has places that suit it."""
    if places and rng.random() < chance:
        return phrase + " " + place(rng, places)
    return phrase


# Things that happen once rather than as a habit: "Every day, Max loses his key" reads oddly.
ONE_OFF = ("find", "lose", "drop", "hide", "give away", "borrow", "pick up", "wrap", "spot",
           "jump", "sneeze", "cry", "shout", "yawn", "giggle", "nod", "smile", "wave",
           "stand up", "sit down", "come back", "look around", "think")
TRANSITIVE_HABITS = [verb for verb in TRANSITIVE if verb[0] not in ONE_OFF]
INTRANSITIVE_HABITS = [verb for verb in INTRANSITIVE if verb[0] not in ONE_OFF]
# Nobody plans to lose or drop things, so "wanted to ..." leaves those out.
PLANNED = [verb for verb in TRANSITIVE if verb[0] not in ("lose", "drop")]


def transitive(rng, who, where=0.0, verbs=TRANSITIVE):
    """A verb and a fitting object, as (base, past, object [+ place, with chance `where`])."""
    base, past, maker, places = rng.choice(verbs)
    return base, past, with_place(rng, maker(rng, who), places, where)


def intransitive(rng, where=0.0, verbs=INTRANSITIVE):
    """An intransitive verb, half the time with an adverb that suits it, sometimes with a place."""
    base, past, adverbs, places = rng.choice(verbs)
    # "think" and "hurry" sound unfinished alone, so they always take their word
    always = base in ("think", "hurry")
    tail = " " + rng.choice(adverbs.split(", ")) if always or rng.random() < 0.5 else ""
    tail = with_place(rng, tail, places, where)
    return base + tail, past + tail


# --------------------------------------------------------------------------
# Sentence makers.  Each returns a list of sentences; a row joins them.
# --------------------------------------------------------------------------

def simple_past(rng):
    """'On Monday, Ivy fed the hens in the barn.'"""
    who = someone(rng)
    if rng.random() < 0.65:
        _, past, obj = transitive(rng, who, where=0.5)
        clause = who.name + " " + past + " " + obj
    else:
        _, past = intransitive(rng, where=0.5)
        clause = who.name + " " + past
    return [with_time(rng, clause, time_past(rng)) + "."]


def habit(rng):
    """'Every morning, the twins feed the hens.' Present tense, so agreement matters."""
    who = someone(rng)
    if rng.random() < 0.7:
        base, _, obj = transitive(rng, who, where=0.4, verbs=TRANSITIVE_HABITS)
        clause = who.name + " " + present(who, base) + " " + obj
    else:
        base, _ = intransitive(rng, where=0.4, verbs=INTRANSITIVE_HABITS)
        clause = who.name + " " + present(who, base)
    sentences = [with_time(rng, clause, time_habit(rng)) + "."]
    if rng.random() < 0.5:
        # A second habit with a frequency word: "She often sweeps the porch."
        base, _, obj = transitive(rng, who, verbs=TRANSITIVE_HABITS)
        adverb = rng.choice(["sometimes", "often", "also"])
        sentences.append(cap(who.subj) + " " + adverb + " " + present(who, base) + " " + obj + ".")
    return sentences


FEELINGS = [  # (feeling, things a person does about it, in the past tense)
    ("hungry", ["ate {food}", "made {cook}", "went to the bakery"]),
    ("thirsty", ["drank {drink}", "poured {drink}"]),
    ("tired", ["went to bed early", "took a long nap", "sat down to rest", "fell asleep in the chair"]),
    ("cold", ["put on {poss} warmest {coat}", "sat close to the fire", "made a pot of hot tea",
              "closed the window"]),
    ("bored", ["read {read}", "went for a walk", "played {play}", "wrote {write}"]),
    ("sad", ["called an old friend", "went for a long walk", "cried a little", "hugged {poss} {dog}"]),
    ("happy", ["sang all the way home", "danced in the kitchen", "whistled a tune", "baked {bake} for everyone"]),
    ("lonely", ["visited {person}", "wrote {write}", "went to the market to see people"]),
    ("worried", ["asked {person} for help", "checked the door twice", "could not sleep"]),
    ("excited", ["could not sit still", "told everyone the news", "ran all the way to school"]),
    ("sleepy", ["yawned and went to bed", "rubbed {poss} eyes", "fell asleep on the sofa"]),
    ("curious", ["opened the old box", "looked behind the door", "followed the path into the woods"]),
]


def fill(rng, who, pattern):
    """Fill {food}, {drink}, ... in an action pattern with fitting objects."""
    makers = [("{food}", food), ("{drink}", drink), ("{cook}", cookable), ("{read}", reading),
              ("{play}", playable), ("{write}", writing), ("{bake}", bakeable),
              ("{person}", person_object)]
    for slot, maker in makers:          # a list, so the order (and the randomness) is fixed
        if slot in pattern:
            pattern = pattern.replace(slot, maker(rng, who))
    return own(who, pattern)


def own(who, pattern):
    """Fill {poss} and make owned things agree: 'her warmest coat', 'their warmest coats'."""
    for noun in ["coat", "hat", "dog"]:
        pattern = pattern.replace("{" + noun + "}", plural(noun) if who.plural else noun)
    return pattern.replace("{poss}", who.poss)


def feeling_so(rng):
    """'Sam was hungry, so he ate a warm bun.' / '... because she was tired.'"""
    who = someone(rng)
    feeling, actions = rng.choice(FEELINGS)
    action = fill(rng, who, rng.choice(actions))
    form = rng.random()
    if form < 0.4:
        return [cap(who.name) + " " + was(who) + " " + feeling + ", so " + who.subj + " " + action + "."]
    if form < 0.7:
        return [cap(who.name) + " " + action + " because " + who.subj + " " + was(who) + " " + feeling + "."]
    return [cap(who.name) + " felt " + feeling + " " + time_past(rng) + ".",
            cap(who.subj) + " " + action + "."]


WEATHER = [  # (what the day was like, what people did about it)
    ("sunny and warm", ["ate lunch outside", "hung the washing in the yard", "went swimming in the lake",
                        "sat in the shade of a tree", "wore {poss} straw {hat}"]),
    ("cold and windy", ["wore {poss} warmest {coat}", "stayed by the fire", "closed all the windows",
                        "made a pot of hot soup"]),
    ("gray and rainy", ["took an umbrella", "stayed inside and read", "wore {poss} rubber boots",
                        "played cards by the window"]),
    ("cool and cloudy", ["went for a long walk", "worked in the garden", "wore a light sweater"]),
    ("foggy and damp", ["walked slowly along the road", "carried a lantern", "stayed close to home"]),
    ("hot and dry", ["watered the garden twice", "drank lots of cold water", "rested in the shade",
                     "went swimming in the river"]),
    ("snowy and still", ["built a snowman", "went sledding on the hill", "cleared the path with a shovel",
                         "put out seeds for the birds"]),
    ("wet and stormy", ["stayed indoors", "tied the boat to the dock", "brought the hens into the barn"]),
    ("bright but chilly", ["wore a scarf and gloves", "went for a brisk walk", "rode a bicycle to the market"]),
    ("frosty and clear", ["scraped the ice off the window", "wore two pairs of socks",
                          "looked at the stars that night"]),
    ("mild and calm", ["painted the fence", "went fishing on the lake", "planted seeds in the garden"]),
]

WEATHER_EVENTS = [
    "The wind shook the old apple tree.", "Rain tapped on the window all night.",
    "Snow covered the roofs and the roads.", "Fog hid the hills until noon.",
    "The sun dried the washing in an hour.", "Frost made the grass white and stiff.",
    "Thunder rumbled over the hills.", "The storm broke a branch off the oak tree.",
    "A rainbow appeared over the meadow.", "The river rose after three days of rain.",
    "The puddles froze in the night.", "A warm breeze came from the south.",
    "The snow melted and the streams ran fast.", "Lightning flashed far out at sea.",
    "The clouds cleared and the stars came out.", "Hail bounced on the roof of the shed.",
    "The wind blew the leaves into a pile by the gate.", "Mist rose from the pond at dawn.",
    "The drizzle stopped just before lunch.", "Heavy rain turned the path to mud.",
]


def weather(rng):
    """'It was cold and windy on Monday, so Ben wore his warmest coat.'"""
    who = someone(rng)
    day, actions = rng.choice(WEATHER)
    action = own(who, rng.choice(actions))
    form = rng.random()
    if form < 0.35:
        return ["It was " + day + " " + time_past(rng) + ", so " + who.name + " " + action + "."]
    if form < 0.55:
        return ["Because it was " + day + ", " + who.name + " " + action + "."]
    if form < 0.75:
        tomorrow, _ = rng.choice(WEATHER)
        return ["Today it is " + day + ".", "Tomorrow it will be " + tomorrow + "."]
    return [rng.choice(WEATHER_EVENTS), "The next day was " + day + "."]


def compound(rng):
    """'Ivy fixed the gate, and Sam painted the fence red.' or '... wanted to ..., but ...'"""
    first, second = someone(rng), someone(rng)
    _, past1, obj1 = transitive(rng, first)
    _, past2, obj2 = transitive(rng, second)
    if rng.random() < 0.5:
        return [cap(first.name) + " " + past1 + " " + obj1 + ", and " + second.name + " "
                + past2 + " " + obj2 + "."]
    # Reasons that fit any plan, so the "but" always makes sense.
    reasons = ["it was already late", "there was no time", "something else came up",
               first.subj + " " + was(first) + " too tired", first.subj + " " + was(first) + " too busy",
               first.subj + " had to help " + other_person(rng, first) + " first"]
    base, _, obj = transitive(rng, first, verbs=PLANNED)
    return [cap(first.name) + " wanted to " + base + " " + obj + ", but "
            + rng.choice(reasons) + "."]


def where_is(rng):
    """Dialogue about a lost thing."""
    asker, answerer = named(rng), named(rng)
    while answerer.name == asker.name:
        answerer = named(rng)
    noun = rng.choice(THINGS + CLOTHES)
    spot = rng.choice(FURNITURE)
    line = rng.choice(["Where is my " + noun + "?", "Have you seen my " + noun + "?",
                       "Do you know where my " + noun + " is?"])
    reply = rng.choice(["It is " + spot + ".", "I saw it " + spot + ".",
                        "Look " + spot + ".", "I think it is " + spot + "."])
    return [quote(line, rng.choice(["asked", "called"]) + " " + asker.name),
            quote(reply, "said " + answerer.name)]


def quote(line, tag):
    """'"Pass the salt," said Mira.' A statement's full stop becomes a comma inside the quotes."""
    line = cap(line)
    if line.endswith("."):
        line = line[:-1] + ","
    return '"' + line + '" ' + tag + "."


# Things people say, each with replies that make sense after it.
REQUESTS = [
    ("Can I borrow your {thing}?", ["Of course, here it is.", "Yes, but bring it back soon.",
                                     "Sorry, I need it today."]),
    ("Would you like some {dish}?", ["Yes, please.", "No, thank you.", "Just a little, please."]),
    ("Let us go to the {place} {time}.", ["What a good idea.", "I would like that.",
                                          "Maybe another day."]),
    ("Look at that {wild}!", ["Where? I cannot see it.", "Oh, it is lovely.", "Be quiet, or it will run away."]),
    ("Be careful with that {tool}.", ["I will be careful.", "Do not worry about me."]),
    ("The {dish} smells good.", ["I made it this morning.", "Would you like to taste it?",
                                 "It is an old family recipe."]),
    ("Can you help me carry this {thing}?", ["Of course I can.", "Yes, it looks heavy.",
                                            "Give me a minute and I will help."]),
    ("What are you reading?", ["A story about {wild_a}.", "An old book about the sea.",
                               "A letter from my {relative}."]),
    ("Why are you so happy today?", ["My {relative} is coming to visit.", "I finished my work early.",
                                     "The sun is shining."]),
    ("Is it going to rain?", ["I think so. Take your umbrella.", "No, the sky is clear.",
                              "Maybe later this afternoon."]),
    ("Thank you for the {baked}.", ["You are welcome.", "I am glad you liked them."]),
    ("Good morning! How are you?", ["I am well, thank you.", "A little tired, but fine.",
                                    "Very well. And you?"]),
    ("Where are you going?", ["To the {place}.", "Home, it is getting late.",
                              "I am going to see my {relative}."]),
    ("Please close the door.", ["Of course.", "Sorry, I forgot."]),
    ("What time is it?", ["It is {hour} o'clock.", "It is almost {hour}."]),
]
TOOLS = [  # (tool, what it is for)
    ("hammer", "drive nails into wood"), ("saw", "cut wood"), ("spade", "dig holes in the garden"),
    ("rake", "gather fallen leaves"), ("broom", "sweep the floor"), ("bucket", "carry water"),
    ("ladder", "reach high places"), ("needle", "sew cloth"), ("axe", "chop firewood"),
    ("paintbrush", "paint walls and fences"), ("shovel", "move snow and dirt"), ("hoe", "pull up weeds"),
    ("net", "catch fish"), ("pair of scissors", "cut paper"), ("kettle", "boil water"),
    ("wooden spoon", "stir soup"), ("bread knife", "slice bread"), ("pen", "write letters"),
    ("watering can", "water the plants"), ("oar", "row a boat"), ("compass", "find north"),
    ("telescope", "look at the stars"), ("lantern", "see in the dark"),
    ("wheelbarrow", "carry heavy stones"), ("sieve", "sift flour"), ("rolling pin", "roll out dough"),
    ("mop", "wash the floor"), ("wrench", "turn bolts"), ("screwdriver", "turn screws"),
    ("chisel", "shape wood"), ("sponge", "wash the dishes"), ("whisk", "beat eggs"),
    ("ladle", "serve soup"), ("trowel", "plant bulbs"), ("thimble", "protect a finger while sewing"),
    ("funnel", "pour oil into a bottle"), ("ruler", "draw straight lines"), ("clock", "tell the time"),
]


LENDABLE = words("umbrella pencil lantern ladder bicycle hammer saw map compass telescope "
                 "kettle basket book rope wheelbarrow bucket spade")   # things friends lend


def dialogue(rng):
    """Two people talk: a line and a fitting reply."""
    first, second = named(rng), named(rng)
    while second.name == first.name:
        second = named(rng)
    line, replies = rng.choice(REQUESTS)
    reply = rng.choice(replies)
    slots = [("{thing}", rng.choice(LENDABLE)), ("{dish}", rng.choice(DISHES)),
             ("{place}", rng.choice(ALL_PLACES)[1]),
             ("{time}", rng.choice(["today", "tomorrow", "after lunch", "this evening"])),
             ("{wild_a}", a(rng.choice(WILD_ANIMALS))), ("{wild}", rng.choice(WILD_ANIMALS)),
             ("{tool}", rng.choice(TOOLS)[0]), ("{baked}", plural(rng.choice(BAKED))),
             ("{relative}", rng.choice(SHE_RELATIVES + HE_RELATIVES)),
             ("{hour}", number_word(rng.randint(1, 12)))]
    for slot, value in slots:
        line, reply = line.replace(slot, value), reply.replace(slot, value)
    if line.endswith("?"):
        tag = rng.choice(["asked ", "asked ", "wondered "])
    elif line.endswith("!"):
        tag = rng.choice(["cried ", "called ", "shouted "])
    else:
        tag = "said "
    reply_tag = rng.choice(["said ", "replied ", "answered "])
    if rng.random() < 0.3:
        # The speaker can also come first: 'Mira said, "Pass the salt."'
        return [first.name + " " + tag.strip() + ', "' + cap(line) + '"',
                second.name + " " + reply_tag.strip() + ', "' + cap(reply) + '"']
    return [quote(line, tag + first.name), quote(reply, reply_tag + second.name)]


JOBS = [  # (job, what they do, what they did, where)
    ("baker", "bakes bread and sweet buns", "baked bread and sweet buns", "at the bakery"),
    ("farmer", "milks the cows and feeds the hens", "milked the cows and fed the hens", "on the farm"),
    ("fisherman", "catches fish from a small boat", "caught fish from a small boat", "at the harbor"),
    ("teacher", "teaches children to read and count", "taught children to read and count", "at the school"),
    ("doctor", "looks after sick people", "looked after sick people", "at the clinic"),
    ("gardener", "waters the plants and pulls the weeds",
     "watered the plants and pulled the weeds", "in the park"),
    ("carpenter", "makes tables, chairs and doors", "made tables, chairs and doors", "in the workshop"),
    ("tailor", "sews coats and mends torn shirts", "sewed coats and mended torn shirts", "in a little shop"),
    ("shepherd", "watches the sheep on the hills", "watched the sheep on the hills", "in the valley"),
    ("potter", "shapes bowls and jugs from clay", "shaped bowls and jugs from clay", "by the river"),
    ("weaver", "weaves cloth on a wooden loom", "wove cloth on a wooden loom", "in the old mill"),
    ("blacksmith", "heats iron and bends it into tools", "heated iron and bent it into tools", "at the forge"),
    ("mechanic", "fixes engines and flat tires", "fixed engines and flat tires", "at the garage"),
    ("beekeeper", "looks after the bees and collects honey",
     "looked after the bees and collected honey", "in the meadow"),
    ("miller", "grinds wheat into flour", "ground wheat into flour", "at the mill"),
    ("librarian", "looks after the books and helps people find them",
     "looked after the books and helped people find them", "in the library"),
    ("nurse", "cares for people who are ill", "cared for people who were ill", "at the clinic"),
    ("pilot", "flies a small plane over the hills", "flew a small plane over the hills", "at the airfield"),
    ("bus driver", "drives the bus from the village to the town",
     "drove the bus from the village to the town", "at the station"),
    ("painter", "paints pictures of the sea", "painted pictures of the sea", "by the harbor"),
    ("cook", "makes soup and stew for the guests", "made soup and stew for the guests", "at the inn"),
    ("ranger", "looks after the forest and its animals",
     "looked after the forest and its animals", "in the forest"),
    ("shopkeeper", "sells flour, salt, soap and string", "sold flour, salt, soap and string", "in the village"),
    ("builder", "builds houses and walls of stone", "built houses and walls of stone", "in the town"),
    ("sailor", "sails a ship across the sea", "sailed a ship across the sea", "at the harbor"),
    ("musician", "plays the fiddle at weddings", "played the fiddle at weddings", "at the inn"),
    ("clockmaker", "repairs old clocks and watches", "repaired old clocks and watches", "on main street"),
    ("mail carrier", "brings letters and parcels to every house", "brought letters and parcels to every house",
     "at the post office"),
]


def job(rng):
    """'What does a miller do? A miller grinds wheat into flour.'"""
    title, does, did, where = rng.choice(JOBS)
    who = named(rng)
    form = rng.random()
    if form < 0.3:
        return ["What does " + a(title) + " do?", cap(a(title)) + " " + does + "."]
    if form < 0.6:
        return [who.name + " is " + a(title) + " " + where + ".",
                "Every day " + who.subj + " " + does + "."]
    if form < 0.8:
        return ["Long ago, " + who.name + " was " + a(title) + ".", cap(who.subj) + " " + did + "."]
    relative = rng.choice([("aunt", "she"), ("uncle", "he"), ("grandmother", "she"),
                           ("grandfather", "he"), ("cousin", "she"), ("neighbor", "he")])
    return ["My " + relative[0] + " is " + a(title) + ", and " + relative[1] + " " + does + "."]


# --------------------------------------------------------------------------
# A small cast of recurring characters, so the model meets the same people often.
# --------------------------------------------------------------------------

class Character(NamedTuple):
    name: str
    subj: str
    obj: str
    poss: str
    job: str
    pet: str
    pet_name: str
    likes: str            # a plural food, so "them" fits
    hobby: str            # present tense, third person
    hobby_past: str
    mornings: list        # what they did first thing, past tense


CAST = [
    Character("Mira", "she", "her", "her", "baker", "cat", "Button", "plum tarts",
              "sings old songs", "sang old songs",
              ["lit the oven and mixed the dough", "swept the bakery floor", "counted the eggs in the pantry"]),
    Character("Tom", "he", "him", "his", "fisherman", "dog", "Pip", "fried potatoes",
              "carves little wooden boats", "carved little wooden boats",
              ["mended his nets", "rowed out past the harbor wall", "checked the ropes on his boat"]),
    Character("Ada", "she", "her", "her", "gardener", "hen", "Dot", "cherries",
              "knits warm socks", "knitted warm socks",
              ["pulled the weeds", "watered the beans", "picked peas for lunch"]),
    Character("Leo", "he", "him", "his", "student", "rabbit", "Clover", "pancakes",
              "flies his kite", "flew his kite",
              ["packed his school bag", "ate a bowl of porridge", "looked for his other shoe"]),
    Character("Nina", "she", "her", "her", "painter", "goat", "Pepper", "apples",
              "paints the boats in the harbor", "painted the boats in the harbor",
              ["cleaned her brushes", "set up her easel by the window", "mixed a new shade of blue"]),
    Character("Kofi", "he", "him", "his", "farmer", "donkey", "Biscuit", "boiled eggs",
              "plays the drum", "played the drum",
              ["milked the goats", "fed the hens", "mended a hole in the fence"]),
    Character("Rosa", "she", "her", "her", "teacher", "dog", "Maple", "oatcakes",
              "reads books about the stars", "read books about the stars",
              ["wrote the lesson on the board", "opened the classroom windows", "sharpened twenty pencils"]),
    Character("Hugo", "he", "him", "his", "carpenter", "cat", "Shadow", "pickles",
              "whistles while he works", "whistled while he worked",
              ["sharpened his tools", "swept the sawdust from the workshop", "measured the wood for a new door"]),
]

PET_MISCHIEF = [  # (pet, what it got up to)
    ("cat", "knocked a cup off the table"), ("cat", "fell asleep in the bread basket"),
    ("cat", "chased a moth around the kitchen"), ("dog", "ran off with a sock"),
    ("dog", "dug a hole under the fence"), ("dog", "barked at its own shadow"),
    ("hen", "laid an egg in a boot"), ("hen", "walked into the kitchen"),
    ("rabbit", "ate all the lettuce"), ("rabbit", "hid under the bed"),
    ("goat", "chewed the corner of a blanket"), ("goat", "climbed onto the roof of the shed"),
    ("donkey", "refused to cross the bridge"), ("donkey", "ate the flowers by the gate"),
]
REACTIONS = ["laughed", "sighed", "shook {poss} head", "could not stop laughing",
             "pretended to be cross", "gave it a gentle pat"]
TOGETHER = ["drank tea by the fire", "played cards until dark", "talked about the harvest",
            "fed the ducks at the pond", "read a story aloud", "mended the fence together",
            "walked along the river", "made jam from the last plums", "sat on the porch and watched the rain"]
SEARCH_SPOTS = ["under the bed", "behind the door", "in the garden", "in the barn",
                "on the shelf", "in every drawer", "under the table", "in the shed",
                "by the gate", "in the pocket of {poss} coat", "in the bread bin", "on the porch"]


def pick_cast(rng, k):
    return rng.sample(CAST, k)          # a list sample: the same seed picks the same people


def vignette(rng):
    """A two- or three-sentence story about the cast."""
    story = rng.randrange(7)
    if story == 0:
        (c,) = pick_cast(rng, 1)
        return [c.name + " the " + c.job + " woke up early.",
                cap(c.subj) + " " + rng.choice(c.mornings) + ", and then " + c.subj + " "
                + c.hobby_past + "."]
    if story == 1:
        (c,) = pick_cast(rng, 1)
        pet_tricks = [trick for pet, trick in PET_MISCHIEF if pet == c.pet]
        reaction = rng.choice(REACTIONS).replace("{poss}", c.poss)
        return [c.name + "'s " + c.pet + ", " + c.pet_name + ", " + rng.choice(pet_tricks) + ".",
                c.name + " " + reaction + "."]
    if story == 2:
        host, guest = pick_cast(rng, 2)
        food_gift = plural(rng.choice(BAKED))
        return [cap(time_past(rng)) + ", " + guest.name + " visited " + host.name + ".",
                "They " + rng.choice(TOGETHER) + ".",
                host.name + " gave " + guest.obj + " some " + food_gift + " to take home."]
    if story == 3:
        (c,) = pick_cast(rng, 1)
        noun = rng.choice(THINGS)
        first, second, last = rng.sample(SEARCH_SPOTS, 3)
        return [c.name + " could not find " + c.poss + " " + noun + ".",
                cap(c.subj) + " looked " + first.replace("{poss}", c.poss) + " and "
                + second.replace("{poss}", c.poss) + ".",
                "At last " + c.subj + " found it " + last.replace("{poss}", c.poss) + "."]
    if story == 4:
        owner, helper = pick_cast(rng, 2)
        noun = rng.choice(FIXABLE)
        tool = rng.choice(["hammer", "saw", "screwdriver", "wrench", "box of nails", "pot of glue"])
        damage = rng.choice(["broken", "loose", "wobbly", "cracked"])
        pie = a(rng.choice(PIE_FILLINGS) + " pie")
        return [owner.name + "'s " + noun + " was " + damage + ".",
                helper.name + " came over with " + a(tool) + " and fixed it.",
                owner.name + " thanked " + helper.obj + " with " + pie + "."]
    if story == 5:
        (c,) = pick_cast(rng, 1)
        how = rng.choice(["eats them", "buys them at the market", "has them"])
        return [c.name + " loves " + c.likes + ".",
                cap(c.subj) + " " + how + " " + time_habit(rng) + ", and " + c.subj + " "
                + c.hobby + " " + rng.choice(PARTS_OF_DAY) + "."]
    giver, taker = pick_cast(rng, 2)
    gift = rng.choice(["a " + rng.choice(COLORS) + " scarf", "a little wooden bird", "a jar of honey",
                       "a drawing of the harbor", "a basket of " + plural(rng.choice(TREE_FRUITS)),
                       "a new pencil case", "a bunch of " + plural(rng.choice(FLOWERS))])
    thanks = rng.choice(["Thank you!", "How lovely!", "You are very kind."])
    return [giver.name + " gave " + taker.name + " " + gift + ".",
            taker.name + ' smiled and said, "' + thanks + '"']


def cast_question(rng):
    """'Who is the baker? Mira is the baker.' and similar."""
    c = rng.choice(CAST)
    form = rng.randrange(3)
    if form == 0:
        return ["Who is the " + c.job + " in the village?", c.name + " is the " + c.job + "."]
    if form == 1:
        return ["What is the name of " + c.name + "'s " + c.pet + "?",
                "Its name is " + c.pet_name + "."]
    return ["What does " + c.name + " like to eat?", cap(c.subj) + " likes " + c.likes + "."]


# --------------------------------------------------------------------------
# Facts: small true things a child might learn.
# --------------------------------------------------------------------------

NATURE_FACTS = [
    "A week has seven days.", "A year has twelve months.", "A day has twenty-four hours.",
    "An hour has sixty minutes.", "A minute has sixty seconds.", "A year has four seasons.",
    "The sun rises in the east and sets in the west.", "Water freezes when it gets very cold.",
    "Ice melts when it gets warm.", "Plants need water and light to grow.",
    "The moon shines at night.", "Rain falls from the clouds.",
    "Bees carry pollen from flower to flower.", "Many trees lose their leaves in autumn.",
    "Seeds grow into plants.", "Fish breathe through their gills.",
    "Birds build nests in the spring.", "Most apples are ripe in autumn.",
    "Snow is made of tiny crystals of ice.", "The sea tastes of salt.",
    "Rivers run down to the sea.", "Wool comes from sheep.", "Milk comes from cows and goats.",
    "Honey is made by bees.", "Flour is made from wheat.", "Bread is made from flour and water.",
    "Butter is made from cream.", "Paper is made from wood.", "A dozen is twelve.",
    "In winter the days are short and the nights are long.",
    "In summer the days are long and the nights are short.",
    "A thermometer tells you how hot or cold it is.", "A map shows you the way.",
    "Stars are easiest to see on a dark, clear night.", "Thunder comes after lightning.",
    "A clock has an hour hand and a minute hand.", "Eggs come from hens.",
    "Frogs start life as tadpoles.", "Caterpillars turn into butterflies.",
    "An owl sleeps in the day and hunts at night.",
]
COLOR_FACTS = [("grass", "green"), ("snow", "white"), ("coal", "black"), ("a ripe lemon", "yellow"),
               ("a ripe tomato", "red"), ("a carrot", "orange"), ("a ripe plum", "purple"),
               ("the sky on a clear day", "blue"), ("a fox", "red"), ("milk", "white"),
               ("a crow", "black"), ("a ripe banana", "yellow"), ("a rain cloud", "gray"),
               ("a ripe cherry", "red"), ("a pine tree", "green"), ("chocolate", "brown")]
OPPOSITES = [("hot", "cold"), ("big", "small"), ("up", "down"), ("open", "closed"),
             ("early", "late"), ("light", "dark"), ("wet", "dry"), ("full", "empty"),
             ("fast", "slow"), ("loud", "quiet"), ("old", "new"), ("happy", "sad"),
             ("heavy", "light"), ("long", "short"), ("day", "night"), ("left", "right"),
             ("near", "far"), ("first", "last"), ("thick", "thin"), ("hard", "soft"),
             ("rough", "smooth"), ("sweet", "sour"), ("inside", "outside"), ("push", "pull"),
             ("give", "take"), ("buy", "sell"), ("win", "lose"), ("begin", "end"),
             ("above", "below"), ("asleep", "awake"), ("clean", "dirty"), ("strong", "weak"),
             ("wide", "narrow"), ("sharp", "blunt"), ("deep", "shallow"), ("north", "south"),
             ("east", "west"), ("remember", "forget"), ("arrive", "leave"), ("young", "old"),
             ("tall", "short"), ("rich", "poor"), ("noisy", "quiet"), ("always", "never")]
SHAPES = [("triangle", 3), ("square", 4), ("rectangle", 4), ("pentagon", 5), ("hexagon", 6),
          ("octagon", 8)]
ANIMAL_SOUNDS = [("dog", "barks"), ("cat", "purrs"), ("cow", "moos"), ("sheep", "bleats"),
                 ("horse", "neighs"), ("duck", "quacks"), ("owl", "hoots"), ("bee", "buzzes"),
                 ("pig", "grunts"), ("hen", "clucks"), ("goose", "honks"), ("wolf", "howls"),
                 ("frog", "croaks"), ("mouse", "squeaks"), ("snake", "hisses"), ("donkey", "brays"),
                 ("rooster", "crows"), ("lion", "roars")]
BABY_ANIMALS = [("cow", "calf"), ("sheep", "lamb"), ("horse", "foal"), ("dog", "puppy"),
                ("cat", "kitten"), ("goat", "kid"), ("pig", "piglet"), ("duck", "duckling"),
                ("goose", "gosling"), ("hen", "chick"), ("frog", "tadpole"), ("bear", "cub"),
                ("deer", "fawn"), ("swan", "cygnet"), ("owl", "owlet"), ("fox", "cub")]
ANIMAL_HOMES = [("bird", "nest"), ("bee", "hive"), ("rabbit", "burrow"), ("fox", "den"),
                ("spider", "web"), ("horse", "stable"), ("pig", "sty"), ("dog", "kennel"),
                ("hen", "coop"), ("bear", "cave"), ("beaver", "lodge"), ("ant", "nest")]
ANIMAL_FOODS = [("Cows", "grass"), ("Rabbits", "grass, clover and carrots"), ("Squirrels", "nuts and seeds"),
                ("Horses", "hay and oats"), ("Owls", "mice and beetles"), ("Cats", "meat and fish"),
                ("Robins", "worms and berries"), ("Goats", "grass and leaves"), ("Frogs", "flies and slugs"),
                ("Sheep", "grass"), ("Hens", "grain and seeds"), ("Foxes", "mice and rabbits"),
                ("Bees", "nectar from flowers"), ("Ducks", "weeds and small snails"),
                ("Bears", "berries, fish and honey"), ("Hedgehogs", "beetles and worms")]
ABILITIES = [  # (animals, can do, yes or no): only things that are plainly true or false
    ("fish", "swim", True), ("fish", "climb trees", False), ("birds", "fly", True),
    ("ducks", "swim", True), ("ducks", "fly", True), ("cats", "climb trees", True),
    ("dogs", "climb trees", False), ("frogs", "jump", True), ("snakes", "walk", False),
    ("horses", "run fast", True), ("turtles", "run fast", False), ("owls", "see in the dark", True),
    ("bats", "fly", True), ("penguins", "fly", False), ("cows", "fly", False), ("pigs", "fly", False),
    ("bees", "make honey", True), ("spiders", "spin webs", True), ("rabbits", "dig burrows", True),
    ("goats", "climb steep rocks", True), ("seals", "swim", True), ("squirrels", "climb trees", True),
    ("otters", "swim", True), ("snails", "move fast", False), ("beavers", "build dams", True),
    ("ants", "carry heavy loads", True), ("sheep", "fly", False), ("hens", "lay eggs", True),
    ("cows", "lay eggs", False), ("whales", "walk", False),
]
BY_SIZE = words("ant bee mouse frog sparrow rabbit cat fox dog sheep pig cow horse elephant")
RECIPES = [("soup", "carrots, onions, water and salt"), ("pancakes", "flour, eggs and milk"),
           ("a pot of tea", "hot water and tea leaves"), ("a salad", "lettuce, tomatoes and cucumber"),
           ("bread", "flour, water, yeast and salt"), ("porridge", "oats, milk and a spoon of honey"),
           ("lemonade", "lemons, water and sugar"), ("jam", "berries and sugar"),
           ("an omelet", "eggs, butter and a little cheese"), ("a fruit salad", "apples, pears and grapes"),
           ("a sandwich", "two slices of bread and some cheese"), ("cocoa", "milk, cocoa and sugar")]


def number_fact(rng):
    """Counting and sums, always correct: 'Three and four make seven.'"""
    form = rng.randrange(5)
    x, y = rng.randint(1, 10), rng.randint(1, 10)
    if form == 0:
        return [cap(number_word(x)) + " and " + number_word(y) + " make " + number_word(x + y) + "."]
    if form == 1:
        return [cap(number_word(x + y)) + " minus " + number_word(y) + " is " + number_word(x) + "."]
    if form == 2:
        return [cap(number_word(x)) + " times " + number_word(y) + " is " + number_word(x * y) + "."]
    if form == 3:
        noun = rng.choice(TREE_FRUITS + BAKED)
        who = named(rng)
        return [who.name + " had " + count_of(rng, noun, x + 1, x + 1) + " and gave away "
                + number_word(x) + ".",
                "Now " + who.subj + " has one " + noun + " left."]
    n = rng.randint(1, 20)
    return ["What comes after " + number_word(n) + "?", cap(number_word(n + 1)) + " comes after "
            + number_word(n) + "."]


def calendar_fact(rng):
    """Order of days, months and seasons."""
    form = rng.randrange(4)
    if form == 0:
        i = rng.randrange(7)
        return ["The day after " + DAYS[i] + " is " + DAYS[(i + 1) % 7] + "."]
    if form == 1:
        i = rng.randrange(12)
        return [MONTHS[(i + 1) % 12] + " comes after " + MONTHS[i] + "."]
    if form == 2:
        i = rng.randrange(4)
        return [cap(SEASONS[(i + 1) % 4]) + " comes after " + SEASONS[i] + "."]
    i = rng.randrange(7)
    return ["If today is " + DAYS[i] + ", then yesterday was " + DAYS[i - 1]
            + " and tomorrow is " + DAYS[(i + 1) % 7] + "."]


def animal_fact(rng):
    form = rng.randrange(6)
    if form == 0:
        animal, sound = rng.choice(ANIMAL_SOUNDS)
        other, other_sound = rng.choice(ANIMAL_SOUNDS)
        if other == animal:
            return [cap(a(animal)) + " " + sound + "."]
        return [cap(a(animal)) + " " + sound + ", but " + a(other) + " " + other_sound + "."]
    if form == 1:
        animal, baby = rng.choice(BABY_ANIMALS)
        return ["A baby " + animal + " is called " + a(baby) + "."]
    if form == 2:
        animal, home = rng.choice(ANIMAL_HOMES)
        return [cap(a(animal)) + " lives in " + a(home) + "."]
    if form == 3:
        animals, diet = rng.choice(ANIMAL_FOODS)
        return [animals + " eat " + diet + "."]
    if form == 4:
        animals, ability, yes = rng.choice(ABILITIES)
        if rng.random() < 0.5:
            return ["Can " + animals + " " + ability + "?",
                    "Yes, they can." if yes else "No, they cannot."]
        return [cap(animals) + (" can " if yes else " cannot ") + ability + "."]
    small, big = sorted(rng.sample(range(len(BY_SIZE)), 2))
    if big - small < 2:                  # neighbors in the list are too close to call
        big = min(big + 2, len(BY_SIZE) - 1)
    if rng.random() < 0.5:
        return [cap(a(BY_SIZE[big])) + " is bigger than " + a(BY_SIZE[small]) + "."]
    return ["Which is smaller, " + a(BY_SIZE[big]) + " or " + a(BY_SIZE[small]) + "?",
            cap(a(BY_SIZE[small])) + " is smaller."]


def world_fact(rng):
    form = rng.randrange(5)
    if form == 0:
        thing_, color = rng.choice(COLOR_FACTS)
        return [cap(thing_) + " is " + color + "."]
    if form == 1:
        x, y = rng.choice(OPPOSITES)
        if rng.random() < 0.5:
            x, y = y, x
        return ["The opposite of " + x + " is " + y + "."]
    if form == 2:
        shape, sides = rng.choice(SHAPES)
        return [cap(a(shape)) + " has " + number_word(sides) + " sides."]
    if form == 3:
        tool, use = rng.choice(TOOLS)
        return rng.choice([[cap(a(tool)) + " is used to " + use + "."],
                           ["You need " + a(tool) + " to " + use + "."],
                           ["What is " + a(tool) + " for?", "You use it to " + use + "."]])
    dish, parts = rng.choice(RECIPES)
    return ["To make " + dish + ", you need " + parts + "."]


def facts(rng):
    """One or two facts in a row."""
    makers = [number_fact, calendar_fact, animal_fact, world_fact, lambda r: [r.choice(NATURE_FACTS)]]
    sentences = rng.choice(makers)(rng)
    if len(sentences) == 1 and rng.random() < 0.6:
        more = rng.choice(makers)(rng)
        if len(sentences) + len(more) <= MAX_SENTENCES:   # a question keeps its answer
            sentences += more
    return sentences


# --------------------------------------------------------------------------
# Scenes, counting and lists.
# --------------------------------------------------------------------------

ANIMAL_SPOTS = [("cow", "in the field"), ("cow", "in the barn"), ("sheep", "on the hill"),
                ("horse", "in the stable"), ("goat", "in the yard"), ("pig", "in the mud"),
                ("hen", "in the yard"), ("duck", "on the pond"), ("goose", "by the pond"),
                ("swan", "on the lake"), ("frog", "in the pond"), ("fish", "in the river"),
                ("deer", "at the edge of the forest"), ("rabbit", "in the meadow"),
                ("squirrel", "in the oak tree"), ("crow", "on the fence"), ("sparrow", "on the roof"),
                ("owl", "in the old barn"), ("bee", "in the clover"), ("fox", "in the woods"),
                ("cat", "on the windowsill"), ("dog", "on the porch"), ("donkey", "in the field"),
                ("robin", "in the hedge"), ("hedgehog", "under the hedge"), ("otter", "in the river"),
                ("heron", "by the river"), ("bat", "in the attic"), ("mouse", "in the cellar"),
                ("spider", "in the corner"), ("beetle", "under the log"), ("lizard", "on the warm stone"),
                ("seal", "on the rocks"), ("gull", "over the harbor")]


FEW = ("cat", "dog", "horse", "donkey", "owl", "heron", "otter", "fox", "hedgehog", "lizard", "bat")


def counting(rng):
    """'There are five ducks on the pond.' and questions about how many."""
    animal, spot = rng.choice(ANIMAL_SPOTS)
    n = rng.randint(2, 4 if animal in FEW else 12)
    many = number_word(n) + " " + plural(animal)
    form = rng.randrange(3)
    if form == 0:
        return ["There are " + many + " " + spot + "."]
    if form == 1:
        who = someone(rng)
        return [cap(who.name) + " counted " + many + " " + spot + " " + time_past(rng) + "."]
    return ["How many " + plural(animal) + " are " + spot + "?", "There are " + number_word(n) + "."]


def scene(rng):
    """A short description of a place, with something happening in it."""
    kind = rng.random()
    if kind < 0.35:
        prep, noun = rng.choice(PLACES_INDOOR)
        x, y = rng.choice(INDOOR_ADJS[0]), rng.choice(INDOOR_ADJS[1])
        extra = rng.choice(["A cat slept by the stove.",
                            "Someone had left " + a(rng.choice(THINGS)) + " on the table.",
                            "A clock ticked on the wall.",
                            "The smell of " + rng.choice(DISHES) + " filled the air.",
                            "Nobody was there but an old dog.", "A candle burned in the window."])
    elif kind < 0.65:
        prep, noun = rng.choice(PLACES_TOWN)
        x, y = rng.choice(TOWN_ADJS[0]), rng.choice(TOWN_ADJS[1])
        extra = rng.choice(["People were selling " + plural(rng.choice(FRUITS)) + " and "
                            + rng.choice(DISHES) + ".",
                            "Children ran past with " + a(rng.choice(["kite", "ball", "hoop", "dog"])) + ".",
                            "A man was playing the " + rng.choice(INSTRUMENTS) + " by the fountain.",
                            "A cart full of hay rolled slowly by.", "Two old women sat talking on a bench."])
    else:
        prep, noun = rng.choice(PLACES_WILD)
        x, y = rng.choice(WILD_ADJS[0]), rng.choice(WILD_ADJS[1])
        extra = rng.choice([cap(a(rng.choice(WILD_ANIMALS))) + " moved in the grass.",
                            "The only sound was the wind in the trees.",
                            "Wild " + plural(rng.choice(FLOWERS)) + " grew everywhere.",
                            "Somewhere far away, a bird was singing.", "The air smelled of rain."])
    return ["The " + noun + " was " + x + " and " + y + " " + time_past(rng) + ".", extra]


def packing(rng):
    """Lists with commas: 'Ivy packed a map, a lantern and two apples for the trip.'"""
    who = someone(rng)
    items = [a(noun) for noun in rng.sample(THINGS, 2)] + [count_of(rng, rng.choice(FRUITS), 2, 5)]
    form = rng.randrange(3)
    if form == 0:
        return [cap(who.name) + " packed " + join_list(items) + " for the trip."]
    if form == 1:
        return ["In the basket there were " + join_list(items) + "."]
    shopping = rng.sample(["eggs", "milk", "bread", "butter", "flour", "salt", "apples", "soap",
                           "candles", "tea", "rice", "cheese", "onions", "honey"], 4)
    return [cap(who.name) + " wrote a list: " + join_list(shopping) + "."]


def instruction(rng):
    """Commands and simple steps: 'First, wash the carrots. Then chop them into small pieces.'"""
    form = rng.randrange(3)
    if form == 0:
        veg = plural(rng.choice(VEGETABLES))
        return ["First, wash the " + veg + ".", "Then chop them into small pieces.",
                "Last, put them in the pot with "
                + rng.choice(["some water", "a little butter", "the soup"]) + "."]
    if form == 1:
        request = rng.choice(["wash your hands before you eat.", "close the gate so the goats stay in.",
                              "put the " + rng.choice(THINGS) + " back where you found it.",
                              "wipe your boots before you come inside.", "speak quietly in the library.",
                              "feed the " + plural(rng.choice(FARM_ANIMALS)) + " before dark.",
                              "take an umbrella, it looks like rain."])
        return [rng.choice(["Please ", ""]) + request]
    tool, use = rng.choice(TOOLS)
    return ["If you want to " + use + ", use " + a(tool) + "."]


# --------------------------------------------------------------------------
# Putting rows together.
# --------------------------------------------------------------------------

# (maker, weight): the weights set the mix of the corpus, and so its average row length.
MAKERS = [
    (simple_past, 12), (habit, 8), (feeling_so, 8), (weather, 7), (compound, 7),
    (where_is, 5), (dialogue, 10), (job, 6), (vignette, 14), (cast_question, 3),
    (facts, 9), (counting, 4), (scene, 5), (packing, 3), (instruction, 3),
]
SHORT_MAKERS = [simple_past, feeling_so, counting, facts, weather]   # used to top up short rows


def make_row(rng):
    """One row: one to three sentences, topped up if it came out very short."""
    makers = [maker for maker, _ in MAKERS]
    weights = [weight for _, weight in MAKERS]
    sentences = list(rng.choices(makers, weights)[0](rng))
    while len(" ".join(sentences)) < MIN_ROW_CHARS and len(sentences) < MAX_SENTENCES:
        extra = rng.choice(SHORT_MAKERS)(rng)
        if len(sentences) + len(extra) <= MAX_SENTENCES:   # never split a question from its answer
            sentences += extra
    return " ".join(cap(s) for s in sentences)


def make_rows(seed=SEED, n_rows=N_ROWS):
    """The whole corpus as a list of strings; exact repeats are drawn again."""
    rng = random.Random(seed)
    rows, seen = [], set()     # the set is only asked "is this in?", never iterated
    while len(rows) < n_rows:
        row = make_row(rng)
        if row not in seen:
            seen.add(row)
            rows.append(row)
    return rows


def write_csv(rows, path):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["text"])
        for row in rows:
            writer.writerow([row])


def stats(path):
    """Row count, characters of text, distinct lowercased alphabetic words, sha256 of the file."""
    data = Path(path).read_bytes()
    with open(path, encoding="utf-8", newline="") as f:
        rows = [r[0] for r in list(csv.reader(f))[1:]]
    vocab = set(re.findall(r"[a-z]+", " ".join(rows).lower()))
    return {"rows": len(rows), "chars": sum(len(r) for r in rows),
            "chars_first_2000": sum(len(r) for r in rows[:2000]),
            "distinct_words": len(vocab), "sha256": hashlib.sha256(data).hexdigest()}


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT_PATH
    write_csv(make_rows(), out)
    s = stats(out)
    print(f"wrote {out}")
    print(f"rows: {s['rows']}")
    print(f"characters: {s['chars']} (first 2000 rows: {s['chars_first_2000']})")
    print(f"distinct words: {s['distinct_words']}")
    print(f"sha256: {s['sha256']}")


if __name__ == "__main__":
    main()
