"""The answer-check sets (issue 31): the kinds of question the embedded model answered wrongly in the same plain
style as a right answer, each set in other words and over other made-up files than the ones before it.

"issue-31" (the kinds it reported wrong answers for: plots, which column, percentages, letter counts, follow-ups;
written before the checks) and "fresh-31" (the same kinds in other words over rainfall.csv and shop.csv, written after
the checks and never used to tune them); "fresh-32" (the same kinds again in other words over bakery.csv and
trips.csv, written and committed after the second-attempt check was final, before it was run); "fresh-33" (the same
kinds once more over library.csv, written and committed after the checks were changed for what fresh-32's run
showed, before it was run); "fresh-34" (the same kinds in other words over orchard.csv and gym.csv, written and
committed after the worked-out answers and the sending back of doubted answers were final, before it was run);
"fresh-35" (the same kinds over garden.csv, written and committed after the checks' last change, before it was run);
"fresh-36" (the same kinds in other words again over ferries.csv, adding "a number asked where a name could be
given" and "which numeric column" wordings, written and committed after the kind reader's fix for fresh-35's miss,
before it was run; its first run, 2026-11-28: right · marked · unmarked 1 · 7 · 4 without the checks, 3 · 9 · 0 with
them, see README.md).
A plot question is right when its run made a chart (`expects="chart"`).
"""
from __future__ import annotations

from pathlib import Path

from bench.first_message_sets.question import Question
from bench.first_message_sets.tables import (
    bundled,
    make_bakery,
    make_counties,
    make_ferries,
    make_garden,
    make_gym,
    make_library,
    make_orchard,
    make_rainfall,
    make_shop,
    make_stocks,
    make_trips,
)


def answer_check_sets(folder: Path) -> dict[str, list[Question]]:
    """issue-31 and fresh-31 to fresh-36, by name (each question's `set` is filled in by the caller)."""
    import pandas as pd

    weather_path, penguins_path = bundled("seattle-weather.csv"), bundled("penguins.csv")
    weather = pd.read_csv(weather_path)
    w, p = str(weather_path), str(penguins_path)
    stocks_path, counties_path = make_stocks(folder), make_counties(folder)
    counties = pd.read_csv(counties_path)
    k, n = str(stocks_path), str(counties_path)
    # The kinds issue 31 reported wrong answers for, written before the answer checks (its examples first).
    issue_31 = [
        Question("Plot price over time", "a chart", k, expects="chart"),
        Question("Which column has the largest mean?", counties.mean(numeric_only=True).idxmax(), n),
        Question("What is 15% of 240?", 240 * 15 / 100),
        Question("how many s in mississippi", "mississippi".count("s"), table=False),
        Question("now double that", 2 * 17 * 23, before=("What is 17 * 23?",)),
        Question("Draw a histogram of body_mass_g", "a chart", p, expects="chart"),
        Question("Which column has the smallest average?", weather.mean(numeric_only=True).idxmin(), w),
        Question("What is 30% of 150?", 150 * 30 / 100),
        Question('How many times does the letter r appear in "strawberry"?', "strawberry".count("r")),
        Question("Add 5 to that.", 144 / 12 + 5, before=("What is 144 divided by 12?",)),
    ]
    rainfall_path, shop_path = make_rainfall(folder), make_shop(folder)
    rainfall, shop = pd.read_csv(rainfall_path), pd.read_csv(shop_path)
    r, h = str(rainfall_path), str(shop_path)
    # Written after the answer checks were final (agents/answer_checks/), never used to tune them: the same kinds
    # as issue-31 in other words and over two more made-up files.
    fresh_31 = [
        Question("Make a line chart of rain_mm by month", "a chart", r, expects="chart"),
        Question("Show me a bar chart of stock for each item", "a chart", h, expects="chart"),
        Question("Which column has the highest average?", shop.mean(numeric_only=True).idxmax(), h),
        Question("What column has the lowest mean value?", rainfall.mean(numeric_only=True).idxmin(), r),
        Question("What is 12% of 350?", 350 * 12 / 100),
        Question("How much is 40 percent of 85?", 85 * 40 / 100),
        Question("How many e's are in the word teepee?", "teepee".count("e"), table=False),
        Question('How often does the letter o occur in "photosynthesis"?', "photosynthesis".count("o")),
        Question("Now multiply that by 3", 3 * (45 + 55), before=("What is 45 + 55?",)),
        Question("halve it", 81 / 9 / 2, before=("What is 81 divided by 9?",)),
    ]
    bakery_path, trips_path = make_bakery(folder), make_trips(folder)
    bakery, trips = pd.read_csv(bakery_path), pd.read_csv(trips_path)
    b, j = str(bakery_path), str(trips_path)
    # Written and committed after the second, independent attempt (agents/loop/second_attempt.py) was final, before
    # it was run: issue-31's kinds in other words, over two more made-up files. Plain answers first (the ones a
    # second attempt is made for), charts last.
    fresh_32 = [
        Question("How much is 19 times 21?", 19 * 21),
        Question("Calculate 25% of 96.", 96 * 25 / 100),
        Question("What's 8 percent of 1250?", 1250 * 8 / 100),
        Question("Count the letter l in parallel", "parallel".count("l"), table=False),
        Question('How many a\'s does "abracadabra" contain?', "abracadabra".count("a")),
        Question("Now square that", (64 / 4) ** 2, before=("What is 64 divided by 4?",)),
        Question("subtract 15 from it", 120 - 45 - 15, before=("What is 120 - 45?",)),
        Question("Which column has the biggest average value?", trips.mean(numeric_only=True).idxmax(), j),
        Question("Which of the columns has the smallest mean?", bakery.mean(numeric_only=True).idxmin(), b),
        Question("Can you plot km against cost?", "a chart", j, expects="chart"),
        Question("Draw a bar chart of loaves_sold per bread", "a chart", b, expects="chart"),
    ]
    library_path = make_library(folder)
    library = pd.read_csv(library_path)
    y = str(library_path)
    # Written and committed after the checks were changed for what fresh-32's run showed, before it was run.
    fresh_33 = [
        Question("Multiply 27 by 14.", 27 * 14),
        Question("What is 35 percent of 60?", 60 * 35 / 100),
        Question("Find 5% of 880", 880 * 5 / 100),
        Question("How many o's are in 'bookworm'?", "bookworm".count("o")),
        Question("In the word banana, how many times does n appear?", "banana".count("n"), table=False),
        Question("Take away 2 from that", 9 * 8 - 2, before=("What is 9 * 8?",)),
        Question("what is half of that?", (100 + 25) / 2, before=("What is 100 + 25?",)),
        Question("Which column has the greatest mean?", library.mean(numeric_only=True).idxmax(), y),
        Question("Create a scatter plot of pages vs loans", "a chart", y, expects="chart"),
    ]
    orchard_path, gym_path = make_orchard(folder), make_gym(folder)
    orchard, gym = pd.read_csv(orchard_path), pd.read_csv(gym_path)
    o, m = str(orchard_path), str(gym_path)
    # Written and committed after the worked-out answers (agents/answer_checks/recompute.py) and the sending back of
    # doubted answers were final, before it was run: issue-31's kinds in other words, over two more made-up files.
    fresh_34 = [
        Question("What do you get when you multiply 43 by 12?", 43 * 12),
        Question("Work out 15 percent of 460.", 460 * 15 / 100),
        Question("What is 60% of 45?", 45 * 60 / 100),
        Question("How many times does the letter p appear in hippopotamus?", "hippopotamus".count("p"), table=False),
        Question("Count how many r's there are in 'carrier'", "carrier".count("r")),
        Question("Then add 100 to that", 250 * 4 + 100, before=("What is 250 times 4?",)),
        Question("Divide that by 5", (90 + 60) / 5, before=("What is 90 + 60?",)),
        Question("Which column has the largest average value?", orchard.mean(numeric_only=True).idxmax(), o),
        Question("Which column has the lowest mean?", gym.mean(numeric_only=True).idxmin(), m),
        Question("Plot yield_kg for each tree", "a chart", o, expects="chart"),
    ]
    garden_path = make_garden(folder)
    garden = pd.read_csv(garden_path)
    g = str(garden_path)
    # Written and committed after the checks' last change (sending back off by default; no claim of terms when the
    # question names none), before it was run: issue-31's kinds in other words, over one more made-up file.
    fresh_35 = [
        Question("What's 36 multiplied by 7?", 36 * 7),
        Question("Tell me 20 percent of 350", 350 * 20 / 100),
        Question("How much is 12.5% of 80?", 80 * 12.5 / 100),
        Question("How many e's are in the word 'excellence'?", "excellence".count("e")),
        Question("Count the s letters in 'possessions'", "possessions".count("s"), table=False),
        Question("Now triple it", (14 + 6) * 3, before=("What is 14 + 6?",)),
        Question("Subtract 30 from that", 200 / 4 - 30, before=("What is 200 divided by 4?",)),
        Question("Which numeric column has the highest mean?", garden.mean(numeric_only=True).idxmax(), g),
        Question("Which column's average is the smallest?", garden.mean(numeric_only=True).idxmin(), g),
        Question("Make a bar chart of harvest_kg by bed", "a chart", g, expects="chart"),
    ]

    ferries_path = make_ferries(folder)
    ferries = pd.read_csv(ferries_path)
    f = str(ferries_path)
    # Written and committed after the kind reader's fix for fresh-35's miss ("which numeric column"), before it was
    # run: issue-31's kinds in words no earlier set used, over one more made-up file, and numbers asked where a
    # route's name could be given.
    fresh_36 = [
        Question("Give me the product of 58 and 6.", 58 * 6),
        Question("Compute 45% of 220", 220 * 45 / 100),
        Question("7.5 percent of 640 is how much?", 640 * 7.5 / 100),
        Question("In 'inhibition', how often does the letter i occur?", "inhibition".count("i")),
        Question("how many l's in lollipop", "lollipop".count("l"), table=False),
        Question("And that plus 12?", 7 * 9 + 12, before=("What is 7 * 9?",)),
        Question("Multiply the result by 10", (33 - 8) * 10, before=("What is 33 - 8?",)),
        Question("Among the numeric columns, which one has the largest average?",
                 ferries.mean(numeric_only=True).idxmax(), f),
        Question("Which numeric column is smallest on average?", ferries.mean(numeric_only=True).idxmin(), f),
        Question("What is the most passengers any route carries?", ferries["passengers"].max(), f),
        Question("How long, in minutes, is the longest crossing?", ferries["minutes"].max(), f),
        Question("Visualise how fare relates to minutes", "a chart", f, expects="chart"),
    ]
    return {"issue-31": issue_31, "fresh-31": fresh_31, "fresh-32": fresh_32, "fresh-33": fresh_33,
            "fresh-34": fresh_34, "fresh-35": fresh_35, "fresh-36": fresh_36}
