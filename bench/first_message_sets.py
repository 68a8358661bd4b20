"""The first-message evaluation's questions (bench/first_message_eval.py asks them), with expected answers.

Questions cover arithmetic, short strings and one-column facts about an uploaded table (the bundled
seattle-weather.csv and penguins.csv, and airports.csv and cities.csv made here), and a few follow-ups (a second
message in the same chat, only the second graded). The expected answers are computed here with pandas, for
grading only: the agent never sees them.

Three sets: "original" (the first 24 questions, measured before the small-model prompt's examples were
chosen), "new" (written after, of the same kinds, not used to tune the first prompt, then looked at while
tuning the second) and "held-out" (written before the second round of tuning over two more made-up files,
students.csv and sales.csv, and run only to measure it; read after, for the third round) and "held-out-2"
(written before the third round over one more made-up file, plants.csv, and run only to measure it): their
accuracies are reported apart, so a prompt fitted to the sets it was tuned on shows. Two more for issue 31's
answer checks: "issue-31" (the kinds it reported wrong answers for: plots, which column, percentages, letter
counts, follow-ups; written before the checks) and "fresh-31" (the same kinds in other words over rainfall.csv and
shop.csv, written after the checks and never used to tune them); "fresh-32" (the same kinds again in other words
over bakery.csv and trips.csv, written and committed after the second-attempt check was final, before it was run);
"fresh-33" (the same kinds once more over library.csv, written and committed after the checks were changed for
what fresh-32's run showed, before it was run); "fresh-34" (the same kinds in other words over orchard.csv and
gym.csv, written and committed after the worked-out answers and the sending back of doubted answers were final,
before it was run); "fresh-35" (the same kinds over garden.csv, written and committed after the checks' last
change, before it was run).
A plot question is right when its run made a chart (`expects="chart"`).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).resolve().parent.parent / "ui" / "assets"
#: The sets, in the order they were written (see above).
SETS = ("original", "new", "held-out", "held-out-2", "issue-31", "fresh-31", "fresh-32", "fresh-33", "fresh-34",
        "fresh-35")


@dataclass
class Question:
    text: str
    expected: Any
    file: str | None = None  # the file sent with the (first) message, if any
    before: tuple[str, ...] = ()  # messages sent first in the same chat, not graded (a follow-up)
    set: str = "original"
    table: bool | None = None  # whether the graded question is about the file; None: when it comes with it
    #: "chart": right when the run made a chart (an image file) and succeeded; "" compares the answer.
    expects: str = ""

    @property
    def kind(self) -> str:
        """arithmetic, string, table or chart: what the graded question asks about."""
        if self.expects == "chart":
            return "chart"
        if self.table if self.table is not None else bool(self.file and not self.before):
            return "table"
        return "string" if '"' in self.text else "arithmetic"


def make_airports(folder: Path) -> Path:
    """A small made-up table of airports (fixed seed), so one data set is not bundled with the app."""
    rng = random.Random(18)
    states = ["TX", "CA", "FL", "AK", "NY", "OH", "WA"]
    weights = [9, 7, 5, 4, 3, 2, 2]
    rows: list[str] = []
    for index in range(48):
        code = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(3)) + str(index % 10)
        state = rng.choices(states, weights)[0]
        rows.append(f"{code},{state},{rng.randint(3, 7200)},{rng.randint(1, 5)}")
    return _write_table(folder / "airports.csv", "code,state,elevation_ft,runways", rows)


def make_cities(folder: Path) -> Path:
    """A small made-up table of cities (fixed seed)."""
    rng = random.Random(42)
    countries = ["Norway", "Chile", "Kenya", "Japan", "Peru"]
    weights = [3, 6, 4, 2, 2]
    rows: list[str] = []
    for _ in range(30):
        name = "".join(rng.choice("bcdfglmnprstv") + rng.choice("aeiou") for _ in range(3)).title()
        rows.append(f"{name},{rng.choices(countries, weights)[0]},{rng.randint(2000, 900000)},"
                     f"{rng.randint(5, 800)}.{rng.randint(0, 9)}")
    return _write_table(folder / "cities.csv", "city,country,population,area_km2", rows)


def make_students(folder: Path) -> Path:
    """A small made-up table of students (fixed seed), for the held-out set."""
    rng = random.Random(7)
    schools = ["Hillside", "Riverside", "Oakwood", "Lakeview"]
    rows: list[str] = []
    for index in range(40):
        school = rng.choices(schools, [5, 3, 2, 2])[0]
        rows.append(f"S{index:03d},{school},{rng.choice([6, 7, 8, 9])},{rng.randint(35, 100)},"
                     f"{rng.randint(30, 100)},{rng.randint(0, 14)}")
    return _write_table(folder / "students.csv", "student,school,grade,math_score,reading_score,absences", rows)


def make_sales(folder: Path) -> Path:
    """A small made-up table of sales (fixed seed), for the held-out set."""
    rng = random.Random(11)
    regions, products = ["North", "South", "East", "West", "Central"], ["lamp", "chair", "desk", "shelf"]
    rows: list[str] = []
    for index in range(60):
        product = rng.choices(products, [2, 5, 3, 1])[0]
        rows.append(f"{1000 + index},{rng.choice(regions)},{product},{rng.randint(1, 25)},"
                     f"{rng.randint(15, 480)}.{rng.randint(0, 99):02d},{rng.choice([0, 5, 10, 15, 20])},"
                     f"{rng.randint(1, 12)}")
    return _write_table(folder / "sales.csv", "order,region,product,units,price_eur,discount,month", rows)


def make_plants(folder: Path) -> Path:
    """A small made-up table of garden plants (fixed seed), for the second held-out set."""
    rng = random.Random(29)
    families = ["Rosaceae", "Lamiaceae", "Asteraceae", "Poaceae", "Fabaceae", "Solanaceae"]
    light = ["sun", "shade", "partial"]
    rows: list[str] = []
    for index in range(36):
        name = "".join(rng.choice("bdklmnrstvz") + rng.choice("aeiou") for _ in range(2)).title() + f"-{index}"
        rows.append(f"{name},{rng.choices(families, [2, 6, 3, 2, 1, 1])[0]},{rng.choices(light, [5, 2, 3])[0]},"
                     f"{rng.randint(8, 240)},{rng.randint(4, 310)},{rng.randint(50, 900)},{rng.randint(1, 52)}")
    return _write_table(folder / "plants.csv", "plant,family,light,height_cm,leaf_count,water_ml,bloom_week", rows)


def make_stocks(folder: Path) -> Path:
    """Daily closing prices of three made-up tickers (fixed seed), for "plot ... over time" questions."""
    rng = random.Random(31)
    rows: list[str] = []
    prices = {"AAPL": 180.0, "KLMN": 42.0, "ZORB": 12.5}
    for day in range(1, 29):
        for symbol in prices:
            prices[symbol] = round(prices[symbol] * (1 + rng.uniform(-0.03, 0.03)), 2)
            rows.append(f"2024-02-{day:02d},{symbol},{prices[symbol]},{rng.randint(1000, 90000)}")
    return _write_table(folder / "stocks.csv", "date,symbol,price,volume", rows)


def make_counties(folder: Path) -> Path:
    """A made-up table of counties (fixed seed): text columns beside numeric ones of very different scales."""
    rng = random.Random(47)
    rows: list[str] = []
    for _ in range(25):
        name = "".join(rng.choice("bdfgklmnprstv") + rng.choice("aeiou") for _ in range(3)).title() + " County"
        rows.append(f"{name},{rng.choice(['OR', 'ID', 'NV', 'UT'])},{rng.randint(2000, 400000)},"
                    f"{rng.randint(32000, 91000)},{rng.randint(200, 9000)}")
    return _write_table(folder / "counties.csv", "county,state,population,median_income,area_sq_mi", rows)


def make_rainfall(folder: Path) -> Path:
    """Monthly weather of three made-up towns (fixed seed), for the set written after the answer checks."""
    rng = random.Random(53)
    rows: list[str] = []
    for month in range(1, 13):
        for town in ("Brinmoor", "Catheld", "Oswy"):
            rows.append(f"2023-{month:02d},{town},{rng.randint(5, 160)},{rng.randint(40, 290)},"
                        f"{rng.randint(-4, 27)}.{rng.randint(0, 9)}")
    return _write_table(folder / "rainfall.csv", "month,town,rain_mm,sun_hours,temp_c", rows)


def make_shop(folder: Path) -> Path:
    """A made-up shop's stock list (fixed seed), for the set written after the answer checks."""
    rng = random.Random(59)
    rows: list[str] = []
    for index in range(18):
        category = rng.choice(["tools", "toys", "books"])
        rows.append(f"item-{index:02d},{category},{rng.randint(2, 60)}.{rng.randint(0, 99):02d},"
                    f"{rng.randint(0, 400)},{rng.randint(1, 5)}")
    return _write_table(folder / "shop.csv", "item,category,price,stock,rating", rows)


def make_bakery(folder: Path) -> Path:
    """A made-up bakery's daily sales (fixed seed), for the set written after the second-attempt check."""
    rng = random.Random(61)
    rows: list[str] = []
    for day in range(1, 15):
        for bread in ("rye", "sourdough", "baguette"):
            rows.append(f"2024-03-{day:02d},{bread},{rng.randint(4, 70)},{rng.randint(2, 6)}.{rng.choice([0, 5])}0,"
                        f"{rng.randint(1, 9)}.{rng.randint(0, 9)}")
    return _write_table(folder / "bakery.csv", "day,bread,loaves_sold,price,flour_kg", rows)


def make_trips(folder: Path) -> Path:
    """A made-up log of trips (fixed seed), for the set written after the second-attempt check."""
    rng = random.Random(67)
    rows: list[str] = []
    for index in range(22):
        rows.append(f"T{index:02d},{rng.choice(['Lisbon', 'Oslo', 'Riga', 'Porto'])},{rng.randint(12, 900)},"
                    f"{rng.randint(1, 14)},{rng.randint(20, 640)}")
    return _write_table(folder / "trips.csv", "trip,city,km,hours,cost", rows)


def make_library(folder: Path) -> Path:
    """A made-up library's catalogue (fixed seed), for the set written after fresh-32's changes."""
    rng = random.Random(71)
    rows: list[str] = []
    for index in range(26):
        rows.append(f"B{index:03d},{rng.choice(['novel', 'poetry', 'history', 'science'])},{rng.randint(60, 720)},"
                    f"{rng.randint(0, 48)},{rng.randint(1950, 2023)}")
    return _write_table(folder / "library.csv", "book,genre,pages,loans,year", rows)


def make_orchard(folder: Path) -> Path:
    """A made-up orchard's trees (fixed seed), for the set written after the worked-out answers."""
    rng = random.Random(73)
    rows: list[str] = []
    for index in range(20):
        rows.append(f"tree-{index:02d},{rng.choice(['apple', 'pear', 'plum'])},{rng.randint(3, 40)},"
                    f"{rng.randint(20, 310)}.{rng.randint(0, 9)},{rng.randint(1, 9)}")
    return _write_table(folder / "orchard.csv", "tree,fruit,age_years,yield_kg,rows_from_gate", rows)


def make_garden(folder: Path) -> Path:
    """A made-up allotment's beds (fixed seed), for the set written after the checks' final change."""
    rng = random.Random(83)
    rows: list[str] = []
    for index in range(18):
        rows.append(f"bed{index:02d},{rng.choice(['tomato', 'bean', 'leek', 'kale'])},{rng.randint(2, 30)},"
                    f"{rng.randint(5, 95)},{rng.randint(1, 12)}")
    return _write_table(folder / "garden.csv", "bed,crop,area_m2,harvest_kg,waterings", rows)


def make_gym(folder: Path) -> Path:
    """A made-up gym's visits (fixed seed), for the set written after the worked-out answers."""
    rng = random.Random(79)
    rows: list[str] = []
    for index in range(24):
        rows.append(f"M{index:02d},{rng.choice(['yoga', 'weights', 'swim'])},{rng.randint(15, 120)},"
                    f"{rng.randint(80, 900)},{rng.randint(1, 6)}")
    return _write_table(folder / "gym.csv", "member,class,minutes,calories,visits_per_week", rows)


def _write_table(path: Path, header: str, rows: list[str]) -> Path:
    """A CSV file made here: `header`, then `rows`, one a line."""
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def questions(folder: Path) -> list[Question]:
    """The evaluation set, with expected answers computed from the data."""
    import pandas as pd

    weather_path, penguins_path = ASSETS / "seattle-weather.csv", ASSETS / "penguins.csv"
    airports_path, cities_path = make_airports(folder), make_cities(folder)
    weather, penguins, airports, cities = (pd.read_csv(p) for p in (weather_path, penguins_path, airports_path,
                                                                    cities_path))
    w, p, a, c = str(weather_path), str(penguins_path), str(airports_path), str(cities_path)
    original = [
        Question("What is 17 * 23?", 17 * 23),
        Question("What is 1234 + 5678?", 1234 + 5678),
        Question("What is 2 to the power of 10?", 2 ** 10),
        Question("What is 144 divided by 12?", 144 / 12),
        Question("What is the square root of 169?", math.sqrt(169)),
        Question('Reverse the string "hello".', "olleh"),
        Question('Convert "agent deck" to upper case.', "AGENT DECK"),
        Question('How many characters are in "transformers"?', len("transformers")),
        Question('How many times does the letter s appear in "mississippi"?', "mississippi".count("s")),
        Question('Write "Hello World" in lower case.', "hello world"),
        Question("How many rows does the table have?", len(weather), w),
        Question("What is the maximum of temp_max?", weather["temp_max"].max(), w),
        Question("What is the minimum of temp_min?", weather["temp_min"].min(), w),
        Question("What is the mean of wind?", weather["wind"].mean(), w),
        Question("What is the most frequent weather?", weather["weather"].mode()[0], w),
        Question("How many different weather types are there?", weather["weather"].nunique(), w),
        Question("How many columns does the table have?", penguins.shape[1], p),
        Question("How many distinct values does species have?", penguins["species"].nunique(), p),
        Question("What is the most common island?", penguins["island"].mode()[0], p),
        Question("What is the largest body_mass_g?", penguins["body_mass_g"].max(), p),
        Question("What is the average flipper_length_mm?", penguins["flipper_length_mm"].mean(), p),
        Question("How many rows does the table have?", len(airports), a),
        Question("Which state has the most airports?", airports["state"].mode()[0], a),
        Question("What is the highest elevation_ft?", airports["elevation_ft"].max(), a),
    ]
    new = [
        Question("What is 250 - 73?", 250 - 73),
        Question("What is 36 times 11?", 36 * 11),
        Question("What is 7 to the power of 3?", 7 ** 3),
        Question('Reverse "stressed".', "desserts"),
        Question('How many letters are in the word "encyclopedia"?', len("encyclopedia")),
        Question('Write "open source" in upper case.', "OPEN SOURCE"),
        Question('How many times does the letter a appear in "banana bread"?', "banana bread".count("a")),
        Question("How many rows are in the table?", len(penguins), p),
        Question("What is the minimum of bill_depth_mm?", penguins["bill_depth_mm"].min(), p),
        Question("What is the highest precipitation?", weather["precipitation"].max(), w),
        Question("What is the average temp_min?", weather["temp_min"].mean(), w),
        Question("Which country appears most often?", cities["country"].mode()[0], c),
        Question("How many distinct values does country have?", cities["country"].nunique(), c),
        Question("What is the largest population?", cities["population"].max(), c),
        Question("How many columns does the table have?", cities.shape[1], c),
        # Follow-ups: the second message of a chat is graded.
        Question("What is the smallest area_km2?", cities["area_km2"].min(), c,
                 before=("What is the largest population?",), table=True),
        Question('Reverse the string "python".', "nohtyp", before=("What is 17 * 23?",)),
        Question("What is 9 times 9?", 81, w, before=("What is the mean of wind?",)),
    ]
    students_path, sales_path = make_students(folder), make_sales(folder)
    students, sales = pd.read_csv(students_path), pd.read_csv(sales_path)
    s, t = str(students_path), str(sales_path)
    held_out = [
        Question("What is 48 + 19?", 48 + 19),
        Question("What is 15 times 15?", 15 * 15),
        Question("What is 1000 divided by 8?", 1000 / 8),
        Question('Reverse the string "drawer".', "reward"),
        Question('Convert "machine learning" to upper case.', "MACHINE LEARNING"),
        Question('How many characters are in "keyboard"?', len("keyboard")),
        Question('How many times does the letter e appear in "excellence"?', "excellence".count("e")),
        Question("How many rows does the table have?", len(students), s),
        Question("What is the average math_score?", students["math_score"].mean(), s),
        Question("Which school appears most often?", students["school"].mode()[0], s),
        Question("What is the lowest reading_score?", students["reading_score"].min(), s),
        Question("How many distinct values does grade have?", students["grade"].nunique(), s),
        Question("How many columns does the table have?", sales.shape[1], t),
        Question("What is the maximum of price_eur?", sales["price_eur"].max(), t),
        Question("What is the most common product?", sales["product"].mode()[0], t),
        Question("How many different regions are there?", sales["region"].nunique(), t),
        Question("What is the mean of discount?", sales["discount"].mean(), t),
        Question("What is the maximum of bill_length_mm?", penguins["bill_length_mm"].max(), p),
        Question("What is the highest wind?", weather["wind"].max(), w),
        Question("What is the minimum of absences?", students["absences"].min(), s,
                 before=("How many rows does the table have?",), table=True),
    ]
    plants_path = make_plants(folder)
    plants = pd.read_csv(plants_path)
    g = str(plants_path)
    held_out_2 = [
        Question("What is 64 + 29?", 64 + 29),
        Question("What is 13 times 7?", 13 * 7),
        Question('Reverse the string "planet".', "tenalp"),
        Question('How many times does the letter o appear in "cocoon"?', "cocoon".count("o")),
        Question("How many rows does the table have?", len(plants), g),
        Question("How many columns are in the table?", plants.shape[1], g),
        Question("What is the maximum of height_cm?", plants["height_cm"].max(), g),
        Question("What is the lowest water_ml?", plants["water_ml"].min(), g),
        Question("What is the average leaf_count?", plants["leaf_count"].mean(), g),
        Question("Which family appears most often?", plants["family"].mode()[0], g),
        Question("What is the most common light?", plants["light"].mode()[0], g),
        Question("How many distinct values does family have?", plants["family"].nunique(), g),
        Question("How many different light values are there?", plants["light"].nunique(), g),
        Question("What is the mean of bloom_week?", plants["bloom_week"].mean(), g),
        Question("How many distinct values does island have?", penguins["island"].nunique(), p),
        Question("What is the highest leaf_count?", plants["leaf_count"].max(), g,
                 before=("What is the average leaf_count?",), table=True),
    ]
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
    later = zip(SETS[1:], (new, held_out, held_out_2, issue_31, fresh_31, fresh_32, fresh_33, fresh_34, fresh_35),
                strict=True)
    return original + [replace(q, set=name) for name, part in later for q in part]
