"""The accuracy sets: arithmetic, short strings and one-column facts about a table, and a few follow-ups.

"original" (the first 24 questions, measured before the small-model prompt's examples were chosen), "new" (written
after, of the same kinds, not used to tune the first prompt, then looked at while tuning the second), "held-out"
(written before the second round of tuning over two more made-up files, students.csv and sales.csv, and run only to
measure it; read after, for the third round) and "held-out-2" (written before the third round over one more
made-up file, plants.csv, and run only to measure it): their accuracies are reported apart, so a prompt fitted to
the sets it was tuned on shows.
"""
from __future__ import annotations

import math
from pathlib import Path

from bench.first_message_sets.question import Question
from bench.first_message_sets.tables import bundled, make_airports, make_cities, make_plants, make_sales, make_students


def accuracy_sets(folder: Path) -> dict[str, list[Question]]:
    """original, new, held-out and held-out-2, by name (each question's `set` is filled in by the caller)."""
    import pandas as pd

    weather_path, penguins_path = bundled("seattle-weather.csv"), bundled("penguins.csv")
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
    return {"original": original, "new": new, "held-out": held_out, "held-out-2": held_out_2}
