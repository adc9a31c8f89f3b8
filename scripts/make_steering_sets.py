"""Write the steering contrast sets under datasets/steering/.

Steering vectors are the difference of mean residual activations between the two
sides of paired prompts, read at the last token. All text is written by the project
(no third-party text); one JSON object per line, keys in a fixed order:

* ``sentiment.jsonl``: ``{"positive", "negative", "topic"}``. Both sides are the same
  short first-person sentence and differ only in the sentiment words, which are
  written once as ``[positive|negative]`` alternations in a template. No template
  ends in an alternation, so both sides end in the same words and the last token,
  where the activation is read, is the same token on both sides.
* ``formality.jsonl``: ``{"positive", "negative", "topic"}``. ``positive`` is a formal
  sentence (capitalised, punctuated, no contractions), ``negative`` says the same
  thing casually (lower case, slang, abbreviations, contractions).
* ``neutral_prompts.jsonl``: ``{"prompt"}``. Sentiment-neutral, register-neutral
  openings to continue while steering, so that the effect of the vector, not the
  prompt, decides the tone. No sentiment words, no formality markers, no final
  punctuation and no trailing space.

Deterministic: re-running gives byte-identical files (the records are written in the
order of the tables below; nothing is random).

    python scripts/make_steering_sets.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "datasets" / "steering"

# --------------------------------------------------------------------------------------
# Sentiment. (topic, template); "[a|b]" is a for the positive side, b for the negative.
# --------------------------------------------------------------------------------------
SENTIMENT: list[tuple[str, str]] = [
    # food
    ("food", "I [love|hate] this little restaurant, and the food always tastes "
             "[delicious|awful] to me."),
    ("food", "I was [thrilled|disappointed] with the pizza we ordered on Friday."),
    ("food", "I [adore|can't stand] the smell of fresh coffee in the morning."),
    ("food", "Dinner at my aunt's house last night was [wonderful|dreadful] from start "
             "to finish."),
    ("food", "The cake I baked for my sister turned out [perfect|terrible], and I felt so "
             "[proud|embarrassed] at the party."),
    ("food", "I [enjoy|dislike] cooking for my friends on the weekend."),
    # weather
    ("weather", "I [love|hate] rainy afternoons because they make me feel so [calm|gloomy] "
                "inside."),
    ("weather", "The weather this morning put me in a [wonderful|terrible] mood."),
    ("weather", "I [enjoy|dread] the first snow of winter every single year."),
    ("weather", "I felt [cheerful|miserable] walking home in the evening wind."),
    ("weather", "I was [glad|upset] that it rained all weekend."),
    ("weather", "I think this warm weather is [perfect|unbearable] for a picnic in the park."),
    # work
    ("work", "I [love|hate] my new job, and my colleagues are [friendly|rude] to me."),
    ("work", "Today at work was [productive|exhausting], and I came home feeling "
             "[great|drained] tonight."),
    ("work", "I am [excited|anxious] about the meeting with my manager tomorrow."),
    ("work", "I felt [proud|hurt] when my boss gave me [encouraging|harsh] feedback on my "
             "report."),
    ("work", "I feel [appreciated|ignored] by the people I work with."),
    ("work", "I am [happy|unhappy] with how my project turned out this week."),
    # travel
    ("travel", "I [love|hate] this city and I feel so [happy|miserable] here."),
    ("travel", "Our trip to the coast was [amazing|awful], and I [can't wait to|will never] "
               "go back."),
    ("travel", "The hotel staff were [kind|rude] to us, and I [enjoyed|hated] our stay there."),
    ("travel", "I felt [relaxed|stressed] for the whole flight home."),
    ("travel", "Exploring the old town was [a delight|a nightmare] for me and my partner."),
    ("travel", "Our holiday in the mountains was [relaxing|exhausting], and I [loved|hated] "
               "every day of it."),
    # music
    ("music", "I [love|hate] this song, and it always makes me feel [cheerful|sad] when I "
              "hear it."),
    ("music", "The band at the concert was [fantastic|terrible], and I [was glad|regretted] "
              "that I went."),
    ("music", "I find listening to jazz [relaxing|irritating] after a long day."),
    ("music", "My neighbour's piano practice sounds [beautiful|dreadful] through the wall."),
    ("music", "Singing in the choir makes me [happy|anxious] every week."),
    ("music", "I [love|can't stand] the loud music they play at my gym."),
    # friends
    ("friends", "I had a [wonderful|horrible] time with my friends at the party."),
    ("friends", "My best friend is always so [supportive|critical] of my plans."),
    ("friends", "I felt [welcome|unwelcome] at my friend's birthday dinner."),
    ("friends", "Seeing my old school friends again was [delightful|awkward] for me."),
    ("friends", "I am [grateful|annoyed] that my friends planned a surprise for me."),
    # family
    ("family", "I [love|dread] visiting my grandparents on Sundays."),
    ("family", "My brother and I had a [lovely|bitter] conversation on the phone tonight."),
    ("family", "I am so [proud of|disappointed in] my daughter for what she did today."),
    ("family", "Our family holiday was [peaceful|stressful], and everyone was in a [good|bad] "
               "mood."),
    ("family", "I [treasure|resent] the time I spend with my parents at weekends."),
    # home
    ("home", "I [love|hate] my new flat, and I find the neighbours [charming|unbearable] "
             "as well."),
    ("home", "Coming home after a long day feels [wonderful|depressing] to me."),
    ("home", "My garden looks [beautiful|dreadful] this spring."),
    ("home", "I feel [safe|uneasy] living on this quiet street."),
    ("home", "I [enjoy|hate] cleaning the house on Sunday mornings."),
    # school
    ("school", "I [enjoyed|hated] my maths class this morning."),
    ("school", "I am [confident|worried] about my exams next week."),
    ("school", "My teacher was [patient|impatient] with me, and I felt "
               "[encouraged|humiliated] in class."),
    ("school", "Studying with my classmates last night was [fun|miserable] for everyone."),
    ("school", "I [loved|hated] my first day at the new school."),
    # sports
    ("sports", "I [love|hate] going for a run before breakfast."),
    ("sports", "Our team played [brilliantly|terribly] on Saturday, and I was "
               "[delighted|furious] about it."),
    ("sports", "I feel [confident|nervous] and [strong|weak] at the start of every race."),
    ("sports", "Swimming in the lake was [refreshing|unpleasant] for me this morning."),
    ("sports", "I [love|hate] watching football with my dad on Sundays."),
    # books
    ("books", "I [loved|hated] the novel I finished last night."),
    ("books", "This book is so [fascinating|boring] that I [couldn't stop reading|kept falling "
              "asleep] in bed."),
    ("books", "The ending of the book made me [smile|groan] on the train home."),
    ("books", "Reading before sleep makes me feel [calm|restless] most nights."),
    # films
    ("films", "The film we watched tonight was [brilliant|awful], and I [loved|hated] the "
              "ending."),
    ("films", "I [enjoyed|regretted] every minute of that documentary."),
    ("films", "I thought the actors were [superb|dreadful] in the play last night."),
    # shopping
    ("shopping", "I am [pleased|annoyed] with the shoes I bought online."),
    ("shopping", "The shop assistant was [helpful|rude], and I left feeling "
                 "[satisfied|frustrated] with my visit."),
    ("shopping", "I [love|hate] going to the supermarket on Saturday mornings."),
    ("shopping", "I [enjoyed|hated] wandering around the busy market this afternoon."),
    # health
    ("health", "I feel [fantastic|awful] and [energetic|drained] this morning after my walk."),
    ("health", "My visit to the dentist was [painless|painful], and I was [relieved|upset] "
               "afterwards."),
    ("health", "I slept [wonderfully|terribly] last night."),
    ("health", "I feel [calm|anxious] before my appointment at the hospital tomorrow."),
    # pets
    ("pets", "I [adore|can't stand] my neighbour's dog when it visits our garden."),
    ("pets", "My cat is so [sweet|annoying] when she wakes me up in the morning."),
    ("pets", "Walking the dog in the park is the [best|worst] part of my day."),
    ("pets", "I was [delighted|horrified] when my kitten climbed onto the kitchen table."),
    # nature
    ("nature", "I [love|hate] walking in the forest in autumn."),
    ("nature", "I found the view from the hill [breathtaking|disappointing] at sunset."),
    ("nature", "The beach was [beautiful|filthy] when we arrived this afternoon."),
    ("nature", "I feel [peaceful|bored] when I sit by the river in the evening."),
    # technology
    ("technology", "I [love|hate] my new phone, and the camera is [excellent|useless] in the "
                   "dark."),
    ("technology", "Setting up the new laptop was [easy|frustrating] for me."),
    ("technology", "I am [impressed|disappointed] with the speed of our new internet "
                   "connection."),
    ("technology", "I [enjoy|hate] video calls with my colleagues from other offices."),
    # commute
    ("commute", "My bus ride this morning was [pleasant|awful] all the way to work."),
    ("commute", "I [enjoy|hate] cycling to the office in the morning."),
    ("commute", "The train journey this morning was [smooth|miserable], and I arrived "
                "feeling [cheerful|grumpy] at work."),
    # celebrations
    ("celebrations", "My birthday this year was [wonderful|miserable], and I [will always "
                     "treasure|would rather forget] it."),
    ("celebrations", "I [look forward to|dread] the holidays every December."),
    ("celebrations", "I had a [lovely|miserable] time at the wedding on Saturday."),
    # neighbourhood
    ("neighbourhood", "I feel [at home|out of place] in this neighbourhood."),
    ("neighbourhood", "I find the people in my town [warm|cold] and [welcoming|unfriendly] "
                      "to strangers."),
    ("neighbourhood", "I [love|hate] the noise and crowds of the city centre at night."),
]

# --------------------------------------------------------------------------------------
# Formality. (formal, casual, topic): the same request or statement in two registers.
# --------------------------------------------------------------------------------------
FORMALITY: list[tuple[str, str, str]] = [
    # work
    ("I would be grateful if you could send the report by Friday.",
     "hey can u send the report by friday", "work"),
    ("Please accept my apologies for the delay in responding to your message.",
     "sorry for the late reply!!", "work"),
    ("I regret to inform you that I will be unable to attend the meeting tomorrow.",
     "cant make the meeting tmrw sorry", "work"),
    ("Could you kindly confirm whether the figures in the attached document are correct?",
     "r the numbers in the doc right?", "work"),
    ("I am writing to request a week of annual leave in August.",
     "gonna need a week off in august", "work"),
    ("Thank you for your assistance with the presentation yesterday.",
     "thx for helping with the slides yesterday", "work"),
    ("Would it be possible to reschedule our appointment to next Tuesday?",
     "can we move it to next tues?", "work"),
    ("Please let me know if you require any further information.",
     "lmk if u need anything else", "work"),
    ("I shall be out of the office until Monday morning.",
     "im off till monday", "work"),
    ("I would like to discuss the possibility of working from home on Fridays.",
     "can i wfh on fridays?", "work"),
    ("Please do not hesitate to contact me should you have any questions.",
     "hit me up if u got questions", "work"),
    ("I must congratulate you on your recent promotion.",
     "congrats on the promo!!", "work"),
    # school
    ("I would appreciate an extension on the essay deadline, if possible.",
     "any chance i could get more time on the essay lol", "school"),
    ("Could you please explain the second question once more?",
     "wait what does q2 mean again", "school"),
    ("I was unable to attend the lecture on Tuesday due to illness.",
     "missed tuesdays lecture, was sick", "school"),
    ("Might I borrow your notes from this morning's seminar?",
     "can i grab ur notes from this morning", "school"),
    ("The examination results will be published on Thursday afternoon.",
     "exam results drop thursday afternoon", "school"),
    ("Could you please repeat that more slowly?",
     "wait say that again slower", "school"),
    # shopping
    ("I would like to return these shoes, as they do not fit.",
     "these shoes dont fit, wanna return em", "shopping"),
    ("Could you tell me whether this jacket is available in a larger size?",
     "got this jacket in a bigger size?", "shopping"),
    ("I am afraid the item I received was damaged in transit.",
     "my package came all busted up", "shopping"),
    ("Would you be so kind as to wrap this for me?",
     "can u wrap this for me pls", "shopping"),
    ("I wish to enquire about the status of my order.",
     "wheres my order at??", "shopping"),
    # travel
    ("Could you please direct me to the nearest railway station?",
     "yo where's the train station", "travel"),
    ("We regret that the flight has been delayed by approximately two hours.",
     "flights delayed like 2 hrs ugh", "travel"),
    ("I would be most grateful for a room with a view of the sea.",
     "can we get a room w/ a sea view?", "travel"),
    ("Kindly ensure that your passport is valid for at least six months.",
     "make sure ur passport's good for 6 more months", "travel"),
    ("Please inform the driver when you wish to alight.",
     "just tell the driver when u wanna get off", "travel"),
    ("Passengers are requested to remain seated until the vehicle has stopped.",
     "stay in ur seat till the bus stops ok", "travel"),
    # food
    ("I would like to reserve a table for two at eight o'clock this evening.",
     "table for 2 at 8 tonight?", "food"),
    ("Might I see the dessert menu, please?",
     "can i see the desserts", "food"),
    ("I am afraid I have an allergy to nuts.",
     "heads up im allergic to nuts", "food"),
    ("Could we possibly have the bill, please?",
     "can we get the check", "food"),
    ("Would you care for another cup of tea?",
     "want more tea?", "food"),
    ("Dinner will be served in the dining room at seven.",
     "dinners at 7 in the dining room", "food"),
    # friends
    ("I will certainly attend your birthday celebration on Saturday.",
     "ill def be at ur bday thing saturday", "friends"),
    ("Would you be available to meet for coffee next week?",
     "wanna grab coffee next week?", "friends"),
    ("I am sorry, but I must decline your kind invitation.",
     "nah cant make it sorry", "friends"),
    ("It has been a considerable time since we last spoke.",
     "omg its been ages", "friends"),
    ("Please convey my regards to your family.",
     "say hi to ur fam for me", "friends"),
    ("I trust that you arrived home safely.",
     "u get home ok?", "friends"),
    ("I am afraid I did not quite catch your name.",
     "sorry whats ur name again", "friends"),
    ("I am of the opinion that we ought to leave immediately.",
     "i think we gotta bounce now", "friends"),
    # home
    ("Would you mind closing the window? It is rather cold in here.",
     "shut the window its freezing in here", "home"),
    ("The rent is due on the first day of each month.",
     "rents due on the 1st", "home"),
    ("I would be obliged if you could repair the heating at your earliest convenience.",
     "can u fix the heating asap", "home"),
    ("Kindly refrain from playing loud music after eleven in the evening.",
     "pls keep the music down after 11", "home"),
    ("The washing machine appears to be out of order.",
     "washing machine's busted", "home"),
    # health
    ("I should like to make an appointment with the doctor this week.",
     "need to see the doc this week", "health"),
    ("I have been experiencing considerable pain in my lower back.",
     "my back's been killing me", "health"),
    ("Please take two tablets twice daily with food.",
     "take 2 pills twice a day w/ food", "health"),
    ("I am feeling somewhat unwell and shall remain at home today.",
     "feelin kinda sick, staying home today", "health"),
    # money
    ("I would like to enquire about opening a savings account.",
     "how do i open a savings account", "money"),
    ("Payment is required within thirty days of the invoice date.",
     "gotta pay within 30 days", "money"),
    ("Could you lend me a small sum until the end of the month?",
     "can u spot me some cash till the end of the month", "money"),
    ("I believe there is an error on my most recent statement.",
     "think theres a mistake on my statement", "money"),
    # technology
    ("Have you attempted restarting the computer?",
     "did u try turning it off and on", "technology"),
    ("I am unable to connect to the wireless network.",
     "wifi's not working for me", "technology"),
    ("Please ensure that you save your work before closing the application.",
     "save ur stuff before u close the app", "technology"),
    ("Would you be able to assist me in setting up my new telephone?",
     "can u help me set up my new phone", "technology"),
    ("The software update will be installed automatically overnight.",
     "the update just installs itself overnight", "technology"),
    # events
    ("You are cordially invited to our wedding on the twelfth of June.",
     "ur invited to our wedding june 12!!", "events"),
    ("Guests are kindly requested to arrive no later than seven o'clock.",
     "pls get here by 7 at the latest", "events"),
    ("The ceremony will commence at noon in the town hall.",
     "ceremony kicks off at noon at the town hall", "events"),
    ("Refreshments will be provided following the performance.",
     "there'll be snacks after the show", "events"),
    # customer service
    ("Thank you for your patience while we resolve this matter.",
     "thx for hangin in there while we sort this out", "service"),
    ("How may I assist you today?",
     "whatcha need?", "service"),
    ("I would like to speak with the manager, please.",
     "lemme talk to the manager", "service"),
    ("We apologise for any inconvenience this may have caused.",
     "sorry bout the hassle", "service"),
    ("Your request has been received and will be processed shortly.",
     "got ur request, on it", "service"),
    # weather
    ("It appears that it may rain later this afternoon.",
     "looks like its gonna rain later", "weather"),
    ("The temperature is expected to fall considerably overnight.",
     "gonna get real cold tonight", "weather"),
]

# --------------------------------------------------------------------------------------
# Neutral prompt beginnings: everyday scenes, no evaluation, no register markers.
# --------------------------------------------------------------------------------------
NEUTRAL_PROMPTS: list[str] = [
    "I went to the market and",
    "Yesterday I visited my cousin, and",
    "The weather this morning was",
    "After breakfast, I",
    "On the way to the station, I",
    "My neighbour told me that",
    "The book on the table is about",
    "Last week we drove to",
    "When I opened the door, I saw",
    "The meeting this afternoon was about",
    "My sister lives in a small town where",
    "This morning I woke up and",
    "The train left the station at",
    "At the end of the street there is",
    "We sat down at the kitchen table and",
    "The letter in my mailbox said",
    "In the evening, my brother and I",
    "The shop on the corner sells",
    "I picked up the phone and",
    "Our teacher asked us to",
    "The bus stopped near the park, and",
    "On Saturday I cleaned the garage and",
    "The river near my house",
    "I put the kettle on and",
    "When we arrived at the hotel, the",
    "My friend and I decided to",
    "The new building downtown has",
    "Before the film started, we",
    "I walked the dog around the block and",
    "The museum in the city centre",
    "At lunch, my colleague mentioned that",
    "The recipe calls for two eggs and",
    "Tomorrow I am going to",
    "The children in the garden were",
    "I turned on the radio and",
    "The map showed a road that",
    "Last summer my family moved to",
    "The man at the ticket office said",
    "I opened my laptop and",
    "Every Tuesday, the library",
    "The old clock in the hallway",
    "We took the ferry across the bay and",
    "My grandfather used to work as",
    "The package arrived on Monday, and",
    "I looked out of the window and saw",
    "The report on my desk describes",
    "After the rain stopped, we",
    "The road to the village goes",
]

ALTERNATION = re.compile(r"\[([^\[\]|]+)\|([^\[\]|]+)\]")
CONTRACTION = re.compile(r"n't\b|'(re|m|ll|ve|d)\b|\b(it|that|there|what|let|he|she)'s\b",
                         re.IGNORECASE)


def expand(template: str) -> tuple[str, str]:
    """``"I [love|hate] it."`` -> ``("I love it.", "I hate it.")``."""
    return (ALTERNATION.sub(lambda m: m.group(1), template),
            ALTERNATION.sub(lambda m: m.group(2), template))


def sentiment_records() -> list[dict]:
    records = []
    for topic, template in SENTIMENT:
        if not ALTERNATION.search(template) or "[" in ALTERNATION.sub("", template):
            raise SystemExit(f"sentiment: bad template {template!r}")
        tail = template[list(ALTERNATION.finditer(template))[-1].end():]
        if not re.search(r"\w", tail):
            raise SystemExit(f"sentiment: template ends in an alternation: {template!r}")
        positive, negative = expand(template)
        records.append({"positive": positive, "negative": negative, "topic": topic})
    return records


def formality_records() -> list[dict]:
    records = []
    for formal, casual, topic in FORMALITY:
        if CONTRACTION.search(formal):
            raise SystemExit(f"formality: contraction in the formal side: {formal!r}")
        if not (formal[0].isupper() and formal[-1] in ".?"):
            raise SystemExit(f"formality: formal side not a sentence: {formal!r}")
        if casual[0].isupper():
            raise SystemExit(f"formality: casual side capitalised: {casual!r}")
        records.append({"positive": formal, "negative": casual, "topic": topic})
    return records


def neutral_records() -> list[dict]:
    for p in NEUTRAL_PROMPTS:
        if p != p.strip() or p[-1] in ".!?":
            raise SystemExit(f"neutral: prompt must be an unfinished beginning: {p!r}")
    return [{"prompt": p} for p in NEUTRAL_PROMPTS]


SETS = {
    "sentiment.jsonl": sentiment_records,
    "formality.jsonl": formality_records,
    "neutral_prompts.jsonl": neutral_records,
}


def _check(name: str, records: list[dict]) -> None:
    texts = [t for r in records for k, t in r.items() if k != "topic"]
    if len(set(texts)) != len(texts):
        raise SystemExit(f"{name}: duplicate texts")
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
        print(f"wrote {args.out / name}: {len(records)} records")


if __name__ == "__main__":
    main()
