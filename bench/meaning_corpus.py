"""The archive and the questions of the search-by-meaning benchmark (bench/meaning.py).

RECORDINGS: the transcripts of the bench corpora's own English recordings (bench/data.py: the
LibriVox reading of "Sense and Sensibility", the LibriSpeech utterance, MFA's unscripted
acoustic and cold corpora, the card names, "go forward"), each a record, and the transcripts of
ten meetings and calls written for this benchmark (no corpus we can install ships long English
talk with its text): an owner's archive of ordinary work talk, one segment a line.

QUESTIONS: what an owner would ask of that archive, each with the recording and the segment
that answers it (its place in the recording, from 0). Kind `paraphrase`: asked in other words
than were said (the case search by meaning is for); kind `quote`: asked with words of the
segment itself (the case search by words is for: `both` must not lose it)."""
from __future__ import annotations

RECORDINGS: dict[str, list[str]] = {
    "librivox": [
        "and mister john dashwood had then leisure to consider how much there might be prudently in his power "
        "to do for them",
        "he was not an ill disposed young man",
        "unless to be rather cold hearted and rather selfish is to be ill disposed",
        "had he married a more amiable woman he might have been made still more respectable than he was",
        "he might even have been made amiable himself",
    ],
    "librispeech": [
        "he began a confused complaint against the wizard who had vanished behind the curtain on the left",
    ],
    "acoustic": [
        "this is the acoustic corpus i'm talking pretty fast here there's nothing going else going on",
        "we're just you know there's some speech errors but who cares",
        "um this is me talking really slow and slightly lower in intensity",
        "uh we're just saying some words and here's some more words words words words um and that should be all thanks",
    ],
    "cold": [
        "uh so this is the sick corpus uh i have a cold so i probably sound quite different than the uh acoustic corpus",
        "um the recording environment is also quite different",
        "and i'm saying a bunch of different words that i did not say in the original one",
        "uh and here's a long pause and i think this is probably good alright thanks",
    ],
    "cards": ["ten of clubs", "four queen of clubs", "seven of clubs", "five five",
              "eight of spades four of clubs seven of hearts", "go forward ten meters"],
    "launch": [
        "Good morning everyone, this is the weekly product meeting, we have three items today.",
        "The build is still crashing on older phones, so we are going to push the release to the second week of March.",
        "Marketing will hold the press announcement until the new date is confirmed by engineering.",
        "The beta testers reported that the sign up form is confusing, especially the password rules.",
        "Priya will simplify the form and remove the requirement for a special character.",
        "We also need a new icon, the current one looks blurry on large tablets.",
        "Tom offered to ask the design agency for three alternatives by Friday.",
        "Last item, the support team wants release notes in plain language, not a list of ticket numbers.",
        "We agreed that the product manager writes them and support reviews them before publishing.",
    ],
    "budget": [
        "Let's go through the budget for next year, starting with the cloud costs.",
        "Our hosting bill grew forty percent, mostly because nobody deletes old test servers.",
        "Infrastructure will add automatic shutdown for machines that are idle for more than a week.",
        "Travel is the second biggest line, the conference trips alone cost ninety thousand.",
        "We will send two people to each conference instead of five, and share the recordings internally.",
        "Salaries go up three percent across the board, plus the adjustments from the market review.",
        "The board wants the total to stay flat, so the office snacks and team dinners are cut by half.",
        "Finance needs every department to submit its final numbers by the end of October.",
    ],
    "hiring": [
        "We have two open positions, a backend engineer and a data analyst.",
        "For the backend role we got about sixty applications, but only a handful know PostgreSQL well.",
        "I suggest we add a short take home task instead of the whiteboard puzzle, candidates hate those puzzles.",
        "The analyst candidate from Lisbon was excellent, she explained her churn model very clearly.",
        "Her salary expectation is above our range, so we need approval from the director.",
        "If we cannot match it, we could offer four days a week or a bigger training budget.",
        "Onboarding was a mess last time, the new hire waited two weeks for a laptop.",
        "IT promised to keep two laptops ready in stock from now on.",
    ],
    "office": [
        "The lease on this floor ends in June, and the landlord wants to raise the rent by a quarter.",
        "We looked at a building near the central station, it is smaller but much cheaper.",
        "Since most people come in only twice a week, we do not need a desk for everyone.",
        "The plan is hot desks with a booking app, plus four quiet rooms for calls.",
        "Several people worried about the noise, so we will put acoustic panels in the open area.",
        "Parking is limited there, but the company will pay for a monthly public transport pass.",
        "The move itself is planned for the last weekend of May, movers are already booked.",
        "Everyone has to pack their own things into the labelled boxes by Thursday evening.",
    ],
    "incident": [
        "This is the review of Tuesday night's outage, the website was down for about ninety minutes.",
        "It started when a database migration locked the orders table during peak traffic.",
        "The on call engineer was paged but the alert went to an old phone number.",
        "We rolled back the migration at eleven forty and the site recovered a few minutes later.",
        "No customer data was lost, but around three hundred orders failed and had to be placed again.",
        "Action items: migrations that lock big tables must run at night and be reviewed by two people.",
        "The paging rotation gets checked every Monday so that contact details stay current.",
        "We will also write to the affected customers and give them a ten percent discount code.",
    ],
    "customer": [
        "Thanks for joining the call, we wanted to hear how the rollout went at your clinics.",
        "Overall the doctors like it, dictating notes saves them about twenty minutes a day.",
        "The main complaint is that medical terms are often spelled wrong in the transcripts.",
        "We can add a custom vocabulary with the drug names you use most, that usually helps a lot.",
        "Another thing, some nurses work in loud wards and the recognition gets much worse there.",
        "A headset with a noise cancelling microphone should fix that, we can send a few to try.",
        "On the contract, they want to extend it for two more years if the price stays the same.",
        "I will check with our sales lead and send a written offer before the end of the month.",
    ],
    "security": [
        "Quick security update before we start, last week someone clicked a fake invoice email.",
        "The attacker got the password of one account, but two factor login stopped them.",
        "From next month everyone must use the hardware keys, text message codes will be switched off.",
        "The keys arrive on Wednesday, please pick yours up at the front desk and register it the same day.",
        "We will also run a short phishing training in every team before the summer break.",
        "And please stop sharing passwords in the chat, use the company password manager instead.",
    ],
    "research": [
        "The user study finished, we interviewed eighteen people who run small shops.",
        "Most of them still do their bookkeeping on paper and type it in once a month.",
        "They would pay for an app only if it reads receipts from a photo automatically.",
        "Trust is a big issue, several said they would never upload bank statements to a website.",
        "So the proposal is an offline first app that keeps the data on the phone.",
        "Next step is a clickable prototype that we test with six of the same shop owners in April.",
    ],
    "retro": [
        "Let's start the sprint retrospective, what went well this time?",
        "Pairing on the payment module worked great, we found two bugs before code review.",
        "What did not go well: the daily standup keeps running over half an hour.",
        "We agreed to keep standups to fifteen minutes and move discussions to a separate call.",
        "The test suite takes forty minutes, people stopped running it locally.",
        "Alex will split the slow integration tests into their own job that runs nightly.",
        "And we should celebrate more, nobody even mentioned that we shipped the mobile app.",
        "Next Friday the team lunch is on the company to celebrate the launch.",
    ],
    "garden": [
        "Welcome back to the gardening show, today we talk about tomatoes in small spaces.",
        "If you only have a balcony, pick bush varieties that stay under a meter tall.",
        "Use a pot of at least twenty liters, smaller pots dry out too fast in July.",
        "Water in the early morning, and always at the base, wet leaves invite mildew.",
        "Feed them every two weeks once the first flowers appear, a tomato fertiliser is rich in potassium.",
        "And pinch out the side shoots on tall varieties so the plant puts its energy into fruit.",
    ],
}

# (question, recording, segment, kind)
QUESTIONS: list[tuple[str, str, int, str]] = [
    # the bench corpora's own recordings
    ("what did he think he could afford to give them?", "librivox", 0, "paraphrase"),
    ("was the young man bad natured?", "librivox", 1, "paraphrase"),
    ("being selfish and unfeeling counts as having a bad character", "librivox", 2, "paraphrase"),
    ("a nicer wife would have made him more decent", "librivox", 3, "paraphrase"),
    ("who complained about the magician that disappeared?", "librispeech", 0, "paraphrase"),
    ("the speaker talks quickly and admits to mistakes in their speech", "acoustic", 0, "paraphrase"),
    ("the recording where someone speaks slowly and more quietly", "acoustic", 2, "paraphrase"),
    ("the speaker was ill and their voice sounds different", "cold", 0, "paraphrase"),
    ("the room where it was recorded is not the same", "cold", 1, "paraphrase"),
    ("which playing cards were called out, hearts and spades", "cards", 4, "paraphrase"),
    ("instruction to move ahead a short distance", "cards", 5, "paraphrase"),
    # launch
    ("when did we decide to delay the launch?", "launch", 1, "paraphrase"),
    ("why is the new version late?", "launch", 1, "paraphrase"),
    ("is the press release waiting for anything?", "launch", 2, "paraphrase"),
    ("what did testers say about registration?", "launch", 3, "paraphrase"),
    ("who is going to make the signup page easier?", "launch", 4, "paraphrase"),
    ("the app logo looks bad on big screens", "launch", 5, "paraphrase"),
    ("who will get logo options from the designers?", "launch", 6, "paraphrase"),
    ("who writes the changelog for customers?", "launch", 8, "paraphrase"),
    ("push the release to the second week of March", "launch", 1, "quote"),
    # budget
    ("why are our server costs so high?", "budget", 1, "paraphrase"),
    ("how do we stop paying for unused machines?", "budget", 2, "paraphrase"),
    ("how much did we spend on trips to events?", "budget", 3, "paraphrase"),
    ("fewer employees will attend conferences", "budget", 4, "paraphrase"),
    ("how much will pay rise next year?", "budget", 5, "paraphrase"),
    ("what happens to the team meals?", "budget", 6, "paraphrase"),
    ("what is the deadline for departments to hand in their figures?", "budget", 7, "paraphrase"),
    ("hosting bill grew forty percent", "budget", 1, "quote"),
    # hiring
    ("which jobs are we recruiting for?", "hiring", 0, "paraphrase"),
    ("few applicants are good with databases", "hiring", 1, "paraphrase"),
    ("replace the coding interview puzzle with homework", "hiring", 2, "paraphrase"),
    ("which candidate impressed us with her customer attrition model?", "hiring", 3, "paraphrase"),
    ("she asks for more money than we budgeted", "hiring", 4, "paraphrase"),
    ("what could we offer instead of a higher salary?", "hiring", 5, "paraphrase"),
    ("the new employee had no computer for two weeks", "hiring", 6, "paraphrase"),
    ("take home task instead of the whiteboard puzzle", "hiring", 2, "quote"),
    # office
    ("the rent is going up when the contract ends", "office", 0, "paraphrase"),
    ("where might we relocate to?", "office", 1, "paraphrase"),
    ("people are rarely in the office so we need fewer workstations", "office", 2, "paraphrase"),
    ("how will people reserve a place to sit?", "office", 3, "paraphrase"),
    ("what about the sound level in the new space?", "office", 4, "paraphrase"),
    ("will the company cover the bus and train tickets?", "office", 5, "paraphrase"),
    ("when is moving day?", "office", 6, "paraphrase"),
    ("hot desks with a booking app", "office", 3, "quote"),
    # incident
    ("how long was the site unavailable?", "incident", 0, "paraphrase"),
    ("what caused the downtime?", "incident", 1, "paraphrase"),
    ("why did nobody respond to the alarm?", "incident", 2, "paraphrase"),
    ("when was the change reverted?", "incident", 3, "paraphrase"),
    ("were any purchases lost during the failure?", "incident", 4, "paraphrase"),
    ("what compensation do the affected clients get?", "incident", 7, "paraphrase"),
    ("new rules for risky schema changes", "incident", 5, "paraphrase"),
    ("locked the orders table during peak traffic", "incident", 1, "quote"),
    # customer
    ("how much time do physicians save with dictation?", "customer", 1, "paraphrase"),
    ("drug names come out misspelled", "customer", 2, "paraphrase"),
    ("can we teach it special medical words?", "customer", 3, "paraphrase"),
    ("accuracy drops in noisy hospital rooms", "customer", 4, "paraphrase"),
    ("does the client want to renew the agreement?", "customer", 6, "paraphrase"),
    ("custom vocabulary with the drug names", "customer", 3, "quote"),
    # security
    ("someone fell for a scam email", "security", 0, "paraphrase"),
    ("what prevented the intruder from logging in?", "security", 1, "paraphrase"),
    ("are SMS codes still allowed?", "security", 2, "paraphrase"),
    ("where do I collect my security token?", "security", 3, "paraphrase"),
    ("where should we keep shared passwords?", "security", 5, "paraphrase"),
    ("two factor login stopped them", "security", 1, "quote"),
    # research
    ("how many shopkeepers took part in the interviews?", "research", 0, "paraphrase"),
    ("do small shops keep their accounts by hand?", "research", 1, "paraphrase"),
    ("what feature would make them buy the app?", "research", 2, "paraphrase"),
    ("they do not want to put financial documents online", "research", 3, "paraphrase"),
    ("when will the prototype be tried out?", "research", 5, "paraphrase"),
    ("reads receipts from a photo automatically", "research", 2, "quote"),
    # retro
    ("what helped us catch defects early?", "retro", 1, "paraphrase"),
    ("the morning meeting takes too long", "retro", 2, "paraphrase"),
    ("why don't developers run tests on their laptops?", "retro", 4, "paraphrase"),
    ("is there a free meal for the team?", "retro", 7, "paraphrase"),
    ("standups to fifteen minutes", "retro", 3, "quote"),
    # garden
    ("which tomatoes fit on a small terrace?", "garden", 1, "paraphrase"),
    ("how big should the container be?", "garden", 2, "paraphrase"),
    ("how to avoid fungus on the plants", "garden", 3, "paraphrase"),
    ("how often should I fertilise?", "garden", 4, "paraphrase"),
    ("pinch out the side shoots", "garden", 5, "quote"),
]
