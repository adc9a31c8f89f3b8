"""Write the labelled probe datasets under datasets/probes/.

Three sets, written by the project (no third-party text), each exactly balanced
between labels 0 and 1, one JSON object per line with keys in a fixed order:

* ``capitals_truefalse.jsonl`` (the default probe set): true (1) and false (0)
  statements about capital cities. Countries come in trios whose false statements
  name each other's capitals; ``group`` is the trio, so a group split holds out every
  statement naming a city; ``country`` is the country, ``answer`` the city named.
* ``sentiment.jsonl``: positive (1) and negative (0) one-sentence reviews, each
  followed by a cue ("Overall, it was") whose next token expresses the sentiment;
  ``target_tokens`` is ``{"0": " bad", "1": " good"}``. ``group`` is the adjective,
  the one word that decides the label.
* ``tense.jsonl``: past (1) and present (0, third person singular) sentences.
  ``group`` is the verb lemma, so held-out verbs are unseen in training.

Probes read the last token's activation and split train/test by ``group``. Every
set is built so that, apart from the group's own word, the texts of the two labels
are the same multiset of frames: no other word carries label information.

Deterministic: re-running gives byte-identical files.

    python scripts/make_probe_sets.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "datasets" / "probes"
SEED = 20240611

# --------------------------------------------------------------------------------------
# Capitals. (country as it reads mid-sentence, capital, region). Countries whose capital
# is disputed, recently moved, split between cities, or whose name the capital repeats
# (Mexico City, Kuwait City, Luxembourg, ...) are left out. Diacritics are dropped
# (Bogota, Reykjavik), the common English spelling.
# --------------------------------------------------------------------------------------
CAPITALS: list[tuple[str, str, str]] = [
    # Europe
    ("Albania", "Tirana", "Europe"),
    ("Austria", "Vienna", "Europe"),
    ("Belarus", "Minsk", "Europe"),
    ("Belgium", "Brussels", "Europe"),
    ("Bosnia and Herzegovina", "Sarajevo", "Europe"),
    ("Bulgaria", "Sofia", "Europe"),
    ("Croatia", "Zagreb", "Europe"),
    ("Cyprus", "Nicosia", "Europe"),
    ("the Czech Republic", "Prague", "Europe"),
    ("Denmark", "Copenhagen", "Europe"),
    ("Estonia", "Tallinn", "Europe"),
    ("Finland", "Helsinki", "Europe"),
    ("France", "Paris", "Europe"),
    ("Germany", "Berlin", "Europe"),
    ("Greece", "Athens", "Europe"),
    ("Hungary", "Budapest", "Europe"),
    ("Iceland", "Reykjavik", "Europe"),
    ("Ireland", "Dublin", "Europe"),
    ("Italy", "Rome", "Europe"),
    ("Latvia", "Riga", "Europe"),
    ("Liechtenstein", "Vaduz", "Europe"),
    ("Lithuania", "Vilnius", "Europe"),
    ("Malta", "Valletta", "Europe"),
    ("Moldova", "Chisinau", "Europe"),
    ("Montenegro", "Podgorica", "Europe"),
    ("North Macedonia", "Skopje", "Europe"),
    ("Norway", "Oslo", "Europe"),
    ("Poland", "Warsaw", "Europe"),
    ("Portugal", "Lisbon", "Europe"),
    ("Romania", "Bucharest", "Europe"),
    ("Russia", "Moscow", "Europe"),
    ("Serbia", "Belgrade", "Europe"),
    ("Slovakia", "Bratislava", "Europe"),
    ("Slovenia", "Ljubljana", "Europe"),
    ("Spain", "Madrid", "Europe"),
    ("Sweden", "Stockholm", "Europe"),
    ("Switzerland", "Bern", "Europe"),
    ("Ukraine", "Kyiv", "Europe"),
    ("the United Kingdom", "London", "Europe"),
    # Asia and the Middle East
    ("Afghanistan", "Kabul", "Central and South Asia"),
    ("Armenia", "Yerevan", "Western Asia"),
    ("Azerbaijan", "Baku", "Western Asia"),
    ("Bahrain", "Manama", "Western Asia"),
    ("Bangladesh", "Dhaka", "Central and South Asia"),
    ("Bhutan", "Thimphu", "Central and South Asia"),
    ("Brunei", "Bandar Seri Begawan", "East Asia"),
    ("Cambodia", "Phnom Penh", "East Asia"),
    ("China", "Beijing", "East Asia"),
    ("East Timor", "Dili", "East Asia"),
    ("India", "New Delhi", "Central and South Asia"),
    ("Iran", "Tehran", "Western Asia"),
    ("Iraq", "Baghdad", "Western Asia"),
    ("Japan", "Tokyo", "East Asia"),
    ("Jordan", "Amman", "Western Asia"),
    ("Kyrgyzstan", "Bishkek", "Central and South Asia"),
    ("Laos", "Vientiane", "East Asia"),
    ("Lebanon", "Beirut", "Western Asia"),
    ("Malaysia", "Kuala Lumpur", "East Asia"),
    ("Mongolia", "Ulaanbaatar", "East Asia"),
    ("Nepal", "Kathmandu", "Central and South Asia"),
    ("North Korea", "Pyongyang", "East Asia"),
    ("Oman", "Muscat", "Western Asia"),
    ("Pakistan", "Islamabad", "Central and South Asia"),
    ("the Philippines", "Manila", "East Asia"),
    ("Qatar", "Doha", "Western Asia"),
    ("Saudi Arabia", "Riyadh", "Western Asia"),
    ("South Korea", "Seoul", "East Asia"),
    ("Syria", "Damascus", "Western Asia"),
    ("Tajikistan", "Dushanbe", "Central and South Asia"),
    ("Thailand", "Bangkok", "East Asia"),
    ("Turkey", "Ankara", "Western Asia"),
    ("Turkmenistan", "Ashgabat", "Central and South Asia"),
    ("the United Arab Emirates", "Abu Dhabi", "Western Asia"),
    ("Uzbekistan", "Tashkent", "Central and South Asia"),
    ("Vietnam", "Hanoi", "East Asia"),
    # Africa
    ("Algeria", "Algiers", "Africa"),
    ("Angola", "Luanda", "Africa"),
    ("Botswana", "Gaborone", "Africa"),
    ("Burkina Faso", "Ouagadougou", "Africa"),
    ("Cameroon", "Yaounde", "Africa"),
    ("Cape Verde", "Praia", "Africa"),
    ("the Central African Republic", "Bangui", "Africa"),
    ("Chad", "N'Djamena", "Africa"),
    ("Comoros", "Moroni", "Africa"),
    ("the Democratic Republic of the Congo", "Kinshasa", "Africa"),
    ("Egypt", "Cairo", "Africa"),
    ("Eritrea", "Asmara", "Africa"),
    ("Ethiopia", "Addis Ababa", "Africa"),
    ("Gabon", "Libreville", "Africa"),
    ("the Gambia", "Banjul", "Africa"),
    ("Ghana", "Accra", "Africa"),
    ("Guinea", "Conakry", "Africa"),
    ("Kenya", "Nairobi", "Africa"),
    ("Lesotho", "Maseru", "Africa"),
    ("Liberia", "Monrovia", "Africa"),
    ("Libya", "Tripoli", "Africa"),
    ("Madagascar", "Antananarivo", "Africa"),
    ("Malawi", "Lilongwe", "Africa"),
    ("Mali", "Bamako", "Africa"),
    ("Mauritania", "Nouakchott", "Africa"),
    ("Mauritius", "Port Louis", "Africa"),
    ("Morocco", "Rabat", "Africa"),
    ("Mozambique", "Maputo", "Africa"),
    ("Namibia", "Windhoek", "Africa"),
    ("Niger", "Niamey", "Africa"),
    ("Nigeria", "Abuja", "Africa"),
    ("the Republic of the Congo", "Brazzaville", "Africa"),
    ("Rwanda", "Kigali", "Africa"),
    ("Senegal", "Dakar", "Africa"),
    ("Sierra Leone", "Freetown", "Africa"),
    ("Somalia", "Mogadishu", "Africa"),
    ("South Sudan", "Juba", "Africa"),
    ("Togo", "Lome", "Africa"),
    ("Tunisia", "Tunis", "Africa"),
    ("Uganda", "Kampala", "Africa"),
    ("Zambia", "Lusaka", "Africa"),
    ("Zimbabwe", "Harare", "Africa"),
    # The Americas
    ("Argentina", "Buenos Aires", "Americas"),
    ("the Bahamas", "Nassau", "Americas"),
    ("Barbados", "Bridgetown", "Americas"),
    ("Belize", "Belmopan", "Americas"),
    ("Brazil", "Brasilia", "Americas"),
    ("Canada", "Ottawa", "Americas"),
    ("Chile", "Santiago", "Americas"),
    ("Colombia", "Bogota", "Americas"),
    ("Costa Rica", "San Jose", "Americas"),
    ("Cuba", "Havana", "Americas"),
    ("Dominica", "Roseau", "Americas"),
    ("the Dominican Republic", "Santo Domingo", "Americas"),
    ("Ecuador", "Quito", "Americas"),
    ("Guyana", "Georgetown", "Americas"),
    ("Haiti", "Port-au-Prince", "Americas"),
    ("Honduras", "Tegucigalpa", "Americas"),
    ("Jamaica", "Kingston", "Americas"),
    ("Nicaragua", "Managua", "Americas"),
    ("Paraguay", "Asuncion", "Americas"),
    ("Peru", "Lima", "Americas"),
    ("Saint Lucia", "Castries", "Americas"),
    ("Suriname", "Paramaribo", "Americas"),
    ("Trinidad and Tobago", "Port of Spain", "Americas"),
    ("the United States", "Washington", "Americas"),
    ("Uruguay", "Montevideo", "Americas"),
    ("Venezuela", "Caracas", "Americas"),
    # Oceania
    ("Australia", "Canberra", "Oceania"),
    ("Fiji", "Suva", "Oceania"),
    ("the Marshall Islands", "Majuro", "Oceania"),
    ("New Zealand", "Wellington", "Oceania"),
    ("Papua New Guinea", "Port Moresby", "Oceania"),
    ("Samoa", "Apia", "Oceania"),
    ("the Solomon Islands", "Honiara", "Oceania"),
    ("Tonga", "Nuku'alofa", "Oceania"),
    ("Vanuatu", "Port Vila", "Oceania"),
]

CAPITAL_TEMPLATES = [
    "The capital of {country} is {city}.",
    "{city} is the capital of {country}.",
    "{country_poss} capital city is {city}.",
    "The capital city of {country} is {city}.",
]

# --------------------------------------------------------------------------------------
# Sentiment. Adjectives are paired by index (POSITIVE[i] with NEGATIVE[i]) and a pair
# shares its frames exactly, so nouns, templates and cues carry no label information.
# "good" and "bad" themselves are not used: they are the target tokens.
# --------------------------------------------------------------------------------------
POSITIVE = [
    "wonderful", "excellent", "fantastic", "superb", "brilliant", "delightful", "lovely",
    "great", "amazing", "outstanding", "marvellous", "splendid", "terrific", "enjoyable",
    "charming", "pleasant", "magnificent", "impressive", "perfect", "fabulous",
    "exceptional", "beautiful", "exquisite", "glorious", "phenomenal", "sublime",
    "flawless", "impeccable", "refreshing", "satisfying", "first-rate", "heartwarming",
    "uplifting", "thrilling", "captivating", "engaging", "entertaining", "inspiring",
    "dazzling", "spectacular", "stellar", "top-notch", "awesome", "sensational", "joyful",
    "gorgeous", "fascinating", "enchanting",
]
NEGATIVE = [
    "terrible", "awful", "horrible", "dreadful", "disappointing", "mediocre", "poor",
    "lousy", "miserable", "unpleasant", "boring", "dull", "tedious", "annoying",
    "frustrating", "appalling", "atrocious", "abysmal", "pathetic", "horrendous", "dismal",
    "unbearable", "painful", "subpar", "shoddy", "sloppy", "worthless", "pointless",
    "tiresome", "underwhelming", "unsatisfying", "lacklustre", "forgettable", "wretched",
    "dire", "disastrous", "dreary", "joyless", "uninspired", "amateurish", "irritating",
    "depressing", "second-rate", "disgraceful", "insufferable", "lifeless", "ghastly",
    "exhausting",
]
# Things people review; every adjective above reads naturally with each of them.
NOUNS = [
    "film", "concert", "play", "musical", "comedy show", "album", "book", "novel",
    "lecture", "workshop", "cooking class", "course", "museum tour", "boat trip", "holiday",
    "meal", "dinner", "party", "festival", "exhibition", "match", "series", "podcast",
    "documentary", "opera", "ballet", "performance", "ceremony", "speech", "hotel stay",
    "train journey", "wedding reception", "weekend away", "guided walk", "magic show",
    "debut album",
]
SENTIMENT_TEMPLATES = [
    "The {noun} was {adj}.",
    "I thought the {noun} was {adj}.",
    "Honestly, the {noun} felt {adj}.",
    "We all agreed that the {noun} was {adj}.",
    "To be honest, the {noun} was {adj}.",
    "In my opinion, the {noun} was {adj}.",
    "I have to say that the {noun} was {adj}.",
    "From start to finish, the {noun} was {adj}.",
    "Everyone I spoke to said the {noun} was {adj}.",
    "My friends and I found the {noun} {adj}.",
    "Looking back, the {noun} was {adj}.",
    "For me, the {noun} was {adj}.",
]
SENTIMENT_CUES = [
    "Overall, it was",
    "All in all, it was",
    "In short, it was",
    "In a word, it was",
]
SENTIMENT_TARGETS = {"0": " bad", "1": " good"}
SENTIMENT_PER_ADJECTIVE = 12

# --------------------------------------------------------------------------------------
# Tense. (lemma, present 3rd person singular, past, complements). No complement marks
# time (no "yesterday", "every day", "now"), so only the verb form decides the label.
# --------------------------------------------------------------------------------------
VERBS: list[tuple[str, str, str, list[str]]] = [
    # regular
    ("walk", "walks", "walked", ["to the market", "home along the river", "to the station"]),
    ("open", "opens", "opened", ["the front door", "the letter", "the shop at nine"]),
    ("clean", "cleans", "cleaned", ["the kitchen", "the windows", "the old bicycle"]),
    ("cook", "cooks", "cooked", ["dinner for the family", "a large pot of soup",
                                 "rice and beans"]),
    ("paint", "paints", "painted", ["the garden fence", "a picture of the lake",
                                    "the bedroom walls"]),
    ("play", "plays", "played", ["the piano", "chess in the park", "football with friends"]),
    ("watch", "watches", "watched", ["the birds in the garden", "the evening news",
                                     "the boats in the harbour"]),
    ("call", "calls", "called", ["the plumber", "the office", "a taxi"]),
    ("help", "helps", "helped", ["the new students", "at the library",
                                 "with the washing-up"]),
    ("work", "works", "worked", ["in the garden", "at the bakery", "late at the office"]),
    ("study", "studies", "studied", ["for the exam", "the map carefully",
                                     "French at the library"]),
    ("carry", "carries", "carried", ["the heavy boxes", "a basket of apples",
                                     "the bags upstairs"]),
    ("try", "tries", "tried", ["the new recipe", "to fix the radio", "on the blue jacket"]),
    ("finish", "finishes", "finished", ["the report", "the puzzle", "the long book"]),
    ("wash", "washes", "washed", ["the dishes", "the car", "the muddy boots"]),
    ("fix", "fixes", "fixed", ["the broken chair", "the leaking tap", "the old clock"]),
    ("visit", "visits", "visited", ["the museum", "the old castle", "a friend in the city"]),
    ("answer", "answers", "answered", ["the phone", "the quiz questions", "the email"]),
    ("plant", "plants", "planted", ["tomatoes in the garden", "a row of trees",
                                    "flowers by the gate"]),
    ("climb", "climbs", "climbed", ["the hill", "the narrow stairs", "the old oak tree"]),
    ("listen", "listens", "listened", ["to the radio", "to the rain", "to the old records"]),
    ("move", "moves", "moved", ["the table", "to a new flat", "the boxes into the garage"]),
    ("ask", "asks", "asked", ["a question", "for directions", "the waiter for water"]),
    ("wait", "waits", "waited", ["for the bus", "outside the bank", "in the long queue"]),
    ("jump", "jumps", "jumped", ["over the fence", "into the lake", "across the stream"]),
    ("dance", "dances", "danced", ["at the wedding", "in the kitchen", "to the music"]),
    ("laugh", "laughs", "laughed", ["at the joke", "loudly in the cinema",
                                    "at the cartoon"]),
    ("count", "counts", "counted", ["the coins", "the sheep in the field", "the votes"]),
    ("check", "checks", "checked", ["the tyres", "the map", "the results"]),
    ("order", "orders", "ordered", ["a coffee", "a new sofa", "pizza for everyone"]),
    ("deliver", "delivers", "delivered", ["the parcels", "the post",
                                          "fresh bread to the shop"]),
    ("collect", "collects", "collected", ["old stamps", "the rubbish",
                                          "the tickets at the door"]),
    ("travel", "travels", "travelled", ["to Spain", "by train", "across the country"]),
    ("arrive", "arrives", "arrived", ["at the station", "at the hotel", "home late"]),
    ("pull", "pulls", "pulled", ["the rope", "the cart up the hill",
                                 "weeds from the garden"]),
    ("push", "pushes", "pushed", ["the heavy door", "the pram", "the car up the road"]),
    ("bake", "bakes", "baked", ["bread", "a birthday cake", "biscuits for the school fair"]),
    # irregular
    ("go", "goes", "went", ["to the bakery", "to the library", "for a swim"]),
    ("eat", "eats", "ate", ["an apple", "lunch in the park", "breakfast at the cafe"]),
    ("drink", "drinks", "drank", ["a cup of tea", "a glass of milk", "cold water"]),
    ("write", "writes", "wrote", ["a letter to the council", "a short poem",
                                  "the shopping list"]),
    ("read", "reads", "read", ["the newspaper", "a book about birds", "the instructions"]),
    ("buy", "buys", "bought", ["fresh bread", "a new coat", "tickets for the concert"]),
    ("sell", "sells", "sold", ["vegetables at the market", "the old car",
                               "handmade candles"]),
    ("see", "sees", "saw", ["a fox in the garden", "the mountains from the window",
                            "an old friend in town"]),
    ("take", "takes", "took", ["the bus to work", "the dog for a walk",
                               "a photo of the lake"]),
    ("give", "gives", "gave", ["a speech", "the children some sweets",
                               "the keys to the landlord"]),
    ("make", "makes", "made", ["a cup of coffee", "the beds", "a wooden toy"]),
    ("build", "builds", "built", ["a wooden shed", "a sandcastle", "a model ship"]),
    ("drive", "drives", "drove", ["to the coast", "the children to school",
                                  "a small red car"]),
    ("ride", "rides", "rode", ["a bicycle to work", "the horse along the beach",
                               "the train into town"]),
    ("swim", "swims", "swam", ["in the lake", "across the river", "twenty lengths"]),
    ("run", "runs", "ran", ["in the park", "to the shop", "a small bakery"]),
    ("sing", "sings", "sang", ["in the choir", "a song for the guests", "in the shower"]),
    ("speak", "speaks", "spoke", ["to the manager", "at the meeting",
                                  "French with the guests"]),
    ("teach", "teaches", "taught", ["maths at the school", "the children to swim",
                                    "a cooking class"]),
    ("catch", "catches", "caught", ["the early train", "a large fish", "the ball"]),
    ("bring", "brings", "brought", ["flowers for the table", "a cake to the party",
                                    "the post inside"]),
    ("find", "finds", "found", ["the missing key", "a coin on the path", "a quiet seat"]),
    ("leave", "leaves", "left", ["the house early", "the office at five",
                                 "a note on the table"]),
    ("meet", "meets", "met", ["a friend at the cafe", "the new neighbours",
                              "the mayor after the meeting"]),
    ("send", "sends", "sent", ["a letter to the bank", "a parcel to Canada",
                               "an email to the team"]),
    ("spend", "spends", "spent", ["the afternoon in the garden", "all the money",
                                  "the weekend by the sea"]),
    ("sleep", "sleeps", "slept", ["on the sofa", "in the spare room", "under the stars"]),
    ("sit", "sits", "sat", ["by the window", "on the bench", "at the back of the room"]),
    ("stand", "stands", "stood", ["by the door", "in the queue", "on the platform"]),
    ("wear", "wears", "wore", ["a red scarf", "a heavy coat", "old boots"]),
    ("win", "wins", "won", ["the race", "a prize at the fair", "the chess game"]),
    ("lose", "loses", "lost", ["the keys", "the match", "an umbrella"]),
    ("throw", "throws", "threw", ["the ball to the dog", "the old papers away",
                                  "a stone into the pond"]),
    ("draw", "draws", "drew", ["a map", "a picture of the house", "the curtains"]),
    ("choose", "chooses", "chose", ["the blue paint", "a seat by the window",
                                    "a book from the shelf"]),
    ("forget", "forgets", "forgot", ["the password", "the shopping list", "an umbrella"]),
    ("hold", "holds", "held", ["the baby", "the ladder steady", "the door open"]),
    ("keep", "keeps", "kept", ["the receipts", "a diary", "the garden tidy"]),
    ("feed", "feeds", "fed", ["the cat", "the ducks at the pond", "the chickens"]),
    ("break", "breaks", "broke", ["the silence", "a plate", "the news to the family"]),
    ("grow", "grows", "grew", ["tomatoes", "herbs on the balcony",
                               "vegetables behind the house"]),
    ("fly", "flies", "flew", ["to Paris", "a kite on the beach", "the small plane"]),
    ("hear", "hears", "heard", ["the thunder", "a strange noise", "the church bells"]),
    ("pay", "pays", "paid", ["the bill", "the rent", "for the tickets"]),
    ("tell", "tells", "told", ["a story", "the truth", "the children a joke"]),
    ("understand", "understands", "understood", ["the question", "the problem",
                                                 "the rules"]),
    ("sweep", "sweeps", "swept", ["the floor", "the yard", "the steps"]),
    ("hide", "hides", "hid", ["the presents", "the key under the mat",
                              "behind the curtain"]),
    ("cut", "cuts", "cut", ["the grass", "the bread", "the paper into strips"]),
    ("put", "puts", "put", ["the books on the shelf", "the kettle on",
                            "the milk in the fridge"]),
    ("lend", "lends", "lent", ["a ladder to the neighbours", "money to a friend",
                               "a bike to a colleague"]),
]
SUBJECTS = [
    "The farmer", "The teacher", "My neighbour", "The old man", "The young woman",
    "Our guide", "The doctor", "The baker", "My cousin", "The taxi driver", "The nurse",
    "The captain", "The new manager", "The artist", "The postman", "My aunt",
    "The engineer", "The librarian",
]
TENSE_PAIRS_PER_VERB = 8


def _capitalise(s: str) -> str:
    return s[:1].upper() + s[1:]


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


CAPITALS_GROUP_SIZE = 3


def capital_groups(rng: random.Random) -> list[list[int]]:
    """Countries (indices into CAPITALS) in seeded groups of three; the last group
    takes the remainder (152 countries: 49 trios and one group of five)."""
    order = list(range(len(CAPITALS)))
    rng.shuffle(order)
    k = CAPITALS_GROUP_SIZE
    groups = [order[i:i + k] for i in range(0, len(order) - len(order) % k, k)]
    groups[-1].extend(order[len(groups) * k:])
    return groups


def capitals_records() -> list[dict]:
    """True/false capital statements: each (country, template) gives one of each.

    Countries come in seeded groups of three, and a false statement names the capital
    of another country *of the same group* (the next one for even templates, the one
    after for odd ones). Every city is then a true answer for its own country and a
    false answer only inside its group, exactly once per template, and a group split
    (``group`` is the trio) holds a city out together with every statement naming it.

    Why: with false cities drawn over all countries (this set's first version) a city
    was true for its country and false for a country in another group, so any split
    put it on both sides with opposite labels; probes on early layers, which read the
    answer word, fell below chance (layer 2 at 0.29, bag of words at 0.13) and no
    grouping could fix it. ``country`` keeps the country for a per-country split
    (which brings that trap back, and ``interp probe`` says so).
    """
    rng = random.Random(SEED)
    records = []
    for group in capital_groups(rng):
        name = "/".join(CAPITALS[i][0] for i in group)
        for pos, i in enumerate(group):
            country, city, _ = CAPITALS[i]
            for t, template in enumerate(CAPITAL_TEMPLATES):
                other = group[(pos + 1 + t % 2) % len(group)]
                for label, answer in ((1, city), (0, CAPITALS[other][1])):
                    text = template.format(country=country, city=answer,
                                           country_poss=_possessive(country))
                    records.append({"text": _capitalise(text), "label": label,
                                    "group": name, "country": country, "answer": answer})
    return records


def sentiment_records() -> list[dict]:
    """Reviews + cue. POSITIVE[i] and NEGATIVE[i] share the same twelve frames."""
    rng = random.Random(SEED + 1)
    records = []
    k = SENTIMENT_PER_ADJECTIVE
    for i, (pos, neg) in enumerate(zip(POSITIVE, NEGATIVE, strict=True)):
        frames = []
        for j in range(k):
            noun = NOUNS[(i * k + j) % len(NOUNS)]  # k consecutive nouns: all distinct
            frames.append((noun, rng.choice(SENTIMENT_TEMPLATES), rng.choice(SENTIMENT_CUES)))
        for noun, template, cue in frames:
            for label, adj in ((1, pos), (0, neg)):
                text = f"{template.format(noun=noun, adj=adj)} {cue}"
                records.append({"text": text, "label": label, "group": adj,
                                "target_tokens": dict(SENTIMENT_TARGETS)})
    return records


def tense_records() -> list[dict]:
    """Present/past pairs: same subject and complement, only the verb form differs."""
    rng = random.Random(SEED + 2)
    records = []
    for lemma, present, past, complements in VERBS:
        subjects = rng.sample(SUBJECTS, TENSE_PAIRS_PER_VERB)
        for j, subject in enumerate(subjects):
            complement = complements[j % len(complements)]
            for label, form in ((0, present), (1, past)):
                records.append({"text": f"{subject} {form} {complement}.", "label": label,
                                "group": lemma})
    return records


SETS = {
    "capitals_truefalse.jsonl": capitals_records,
    "sentiment.jsonl": sentiment_records,
    "tense.jsonl": tense_records,
}


def _check(name: str, records: list[dict]) -> None:
    texts = [r["text"] for r in records]
    if len(set(texts)) != len(texts):
        raise SystemExit(f"{name}: duplicate texts")
    n1 = sum(r["label"] for r in records)
    if 2 * n1 != len(records):
        raise SystemExit(f"{name}: labels not balanced ({n1} of {len(records)} are 1)")
    if not all(t.isascii() for t in texts):
        raise SystemExit(f"{name}: non-ASCII text")


def write_jsonl(path: Path, records: Iterable[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, build in SETS.items():
        records = build()
        _check(name, records)
        write_jsonl(args.out / name, records)
        groups = len({r["group"] for r in records})
        print(f"wrote {args.out / name}: {len(records)} records, {groups} groups")


if __name__ == "__main__":
    main()
