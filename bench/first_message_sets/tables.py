"""The made-up tables the evaluation sets ask about, each from a fixed seed so every run sees the same file.

One maker per file, written into the run's temporary folder; the bundled seattle-weather.csv and penguins.csv
come from ui/assets (`bundled`). Each set's file is new to it, so a prompt or check tuned on one set's files
does not see the next set's.
"""
from __future__ import annotations

import random
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent.parent / "ui" / "assets"


def bundled(name: str) -> Path:
    """A data file shipped with the app (ui/assets), e.g. "penguins.csv"."""
    return ASSETS / name


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


def make_ferries(folder: Path) -> Path:
    """A made-up ferry timetable's routes (fixed seed), for the set written after fresh-35's kind-reader fix."""
    rng = random.Random(97)
    rows: list[str] = []
    for _ in range(16):
        route = "-".join("".join(rng.choice("bdghklmnrstw") + rng.choice("aeiou") for _ in range(2)).title()
                         for _ in range(2))
        rows.append(f"{route},{rng.choice(['north', 'south', 'island'])},{rng.randint(2, 35)},"
                    f"{rng.randint(40, 2600)},{rng.randint(15, 190)},{rng.randint(4, 58)}.{rng.choice([0, 5])}0")
    return _write_table(folder / "ferries.csv", "route,pier,sailings_per_week,passengers,minutes,fare", rows)


def _write_table(path: Path, header: str, rows: list[str]) -> Path:
    """A CSV file made here: `header`, then `rows`, one a line."""
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path
