"""Weather service help-desk tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

FORECAST_DAYS = 7
HISTORY_DAYS = 26
RAINY_DAY_MM = 1.0
DRY_DAY_PROBABILITY = 30
ALERT_TYPES = ["heat", "storm", "flood", "frost", "wind"]
SEVERITIES = ["yellow", "orange", "red"]
PLAN_LIMITS = {"free": 3, "plus": 10}
SMS_PLANS = ["plus"]
REPORT_TEMP_MARGIN = 8.0
REPORT_MAX_PRECIP_MM = 100.0
WET_CONDITIONS = ["showers", "rain", "thunderstorm", "hail", "snow"]
UV_BANDS = [
    [11, "extreme", "50+", "Avoid being outside between 11:00 and 16:00; shirt, hat and sunglasses are a must."],
    [8, "very high", "50", "Avoid the midday sun, seek shade, wear a hat and sunglasses."],
    [6, "high", "30", "Seek shade between 11:00 and 16:00 and wear a hat and sunglasses."],
    [3, "moderate", "30", "Wear a hat and sunglasses and stay in the shade around midday."],
    [0, "low", "15", "Little protection needed; sunglasses on bright days."],
]
COUNTRY_ALIASES = {"uk": "gb", "great britain": "gb", "britain": "gb", "england": "gb", "holland": "nl",
                   "the netherlands": "nl", "usa": "us", "argentine republic": "ar"}


# ---------------------------------------------------------------- text and time helpers

def fold(text):
    out = unaccent(text.strip().lower())
    return " ".join(out.replace("-", " ").replace(".", " ").split())


def label(location):
    return f"{location['city']}, {location['country_name']}"


def minutes_of(hhmm):
    parts = hhmm.split(":")
    return int(parts[0]) * 60 + int(parts[1])


def duration_text(minutes):
    return f"{minutes // 60}h {minutes % 60:02d}m"


def offset_of(day):
    """Days from today to `day`; ToolError when `day` is not a YYYY-MM-DD date."""
    if not isinstance(day, str) or len(day) != 10:
        raise ToolError(f"dates must be written as YYYY-MM-DD, got {day!r}")
    return clock.days_between(clock.today(), day)


def check_forecast_day(day):
    offset = offset_of(day)
    last = clock.add_days(clock.today(), FORECAST_DAYS - 1)
    if offset < 0:
        raise ToolError(f"{day} is in the past; forecasts cover {clock.today()} to {last}. "
                        "Use the observation tools for past days")
    if offset >= FORECAST_DAYS:
        raise ToolError(f"forecasts reach only {FORECAST_DAYS} days ahead, up to {last}")
    return offset


def check_history_day(day):
    offset = offset_of(day)
    first = clock.add_days(clock.today(), -HISTORY_DAYS)
    yesterday = clock.add_days(clock.today(), -1)
    if offset >= 0:
        raise ToolError(f"observations exist only for completed days, up to {yesterday}; use the forecast for {day}")
    if offset < -HISTORY_DAYS:
        raise ToolError(f"observations are kept for the last {HISTORY_DAYS} days, from {first} to {yesterday}")
    return offset


def check_range(start_date, end_date, checker):
    checker(start_date)
    checker(end_date)
    if start_date > end_date:
        raise ToolError(f"the start date {start_date} is after the end date {end_date}")


# ---------------------------------------------------------------- data helpers

def location_of(location_id):
    return db.get("locations", location_id)


def forecast_of(location_id, day):
    location_of(location_id)
    check_forecast_day(day)
    rows = db.find("daily_forecasts", {"location_id": location_id, "forecast_date": day})
    if not rows:
        raise ToolError(f"no forecast is available for {location_id} on {day}")
    return rows[0]


def forecasts_between(location_id, start_date, end_date):
    location_of(location_id)
    check_range(start_date, end_date, check_forecast_day)
    rows = db.find("daily_forecasts", {"location_id": location_id}, order_by="forecast_date")
    return [r for r in rows if start_date <= r["forecast_date"] <= end_date]


def observations_between(location_id, start_date, end_date):
    location_of(location_id)
    check_range(start_date, end_date, check_history_day)
    rows = db.find("observations", {"location_id": location_id}, order_by="obs_date")
    found = [r for r in rows if start_date <= r["obs_date"] <= end_date]
    if not found:
        raise ToolError(f"no observations for {location_id} between {start_date} and {end_date}")
    return found


def forecast_view(row):
    return {"date": row["forecast_date"], "condition": row["condition"], "temp_min_c": row["temp_min_c"],
            "temp_max_c": row["temp_max_c"], "precip_probability_pct": row["precip_probability_pct"],
            "precip_mm": row["precip_mm"], "wind_speed_kmh": row["wind_speed_kmh"],
            "wind_gust_kmh": row["wind_gust_kmh"], "wind_direction": row["wind_direction"],
            "uv_index": row["uv_index"], "humidity_pct": row["humidity_pct"], "sunrise": row["sunrise"],
            "sunset": row["sunset"]}


def observation_view(row):
    return {"date": row["obs_date"], "condition": row["condition"], "temp_min_c": row["temp_min_c"],
            "temp_max_c": row["temp_max_c"], "precip_mm": row["precip_mm"], "max_gust_kmh": row["max_gust_kmh"],
            "humidity_pct": row["humidity_pct"]}


def pick_extreme(rows, key, highest):
    """The row with the highest (or lowest) key; ties go to the earliest date (rows are sorted by date)."""
    best = rows[0]
    for row in rows[1:]:
        if (highest and key(row) > key(best)) or (not highest and key(row) < key(best)):
            best = row
    return best


def covers_day(alert, day):
    return alert["valid_from"] < clock.add_days(day, 1) + "T00:00:00" and alert["valid_to"] > day + "T00:00:00"


def alert_state(alert):
    now = clock.now()
    if alert["status"] != "issued":
        return alert["status"]
    if alert["valid_to"] < now:
        return "expired"
    if alert["valid_from"] > now:
        return "upcoming"
    return "in_force"


def alert_view(alert):
    location = location_of(alert["location_id"])
    return {"alert_id": alert["alert_id"], "location_id": alert["location_id"], "location": label(location),
            "alert_type": alert["alert_type"], "severity": alert["severity"], "headline": alert["headline"],
            "valid_from": alert["valid_from"], "valid_to": alert["valid_to"], "state": alert_state(alert)}


def uv_band(uv):
    for band in UV_BANDS:
        if uv >= band[0]:
            return band
    return UV_BANDS[-1]


def normal_postcode(text):
    return text.replace(" ", "").replace("-", "").upper()


def verified_subscriber(subscriber_id):
    subscriber = db.get("subscribers", subscriber_id)
    db.ensure("verifications", {"subscriber_id": subscriber_id},
              "identity not verified: call verify_subscriber for this subscriber first")
    return subscriber


def active_subscriber(subscriber_id):
    subscriber = verified_subscriber(subscriber_id)
    if subscriber["status"] != "active":
        raise ToolError(f"account {subscriber_id} is {subscriber['status']}; it can only unsubscribe from alerts")
    return subscriber


def owned_subscription(subscriber_id, subscription_id):
    subscription = db.owned("subscriptions", subscription_id, "subscriber_id", subscriber_id)
    return subscription


def subscription_view(subscription):
    location = location_of(subscription["location_id"])
    return {"subscription_id": subscription["subscription_id"], "location_id": subscription["location_id"],
            "location": label(location), "alert_type": subscription["alert_type"],
            "min_severity": subscription["min_severity"], "channel": subscription["channel"],
            "created_on": subscription["created_on"]}


def check_channel(subscriber, channel):
    if channel == "sms" and subscriber["plan"] not in SMS_PLANS:
        raise ToolError("SMS alerts are part of the plus plan; free accounts get alerts by email or push")


# ---------------------------------------------------------------- locations and activities

@tool("read")
def find_location(city: str, country: str | None = None) -> list:
    """Find forecast locations by city name, optionally narrowed by country.

    Several places share a name (London, Perth, Córdoba): without a country every match is returned,
    and the caller must say which one they mean. Accents and case are ignored.

    Args:
        city: The city name, e.g. "Innsbruck".
        country: Country name, ISO code or region to tell same-named cities apart, e.g. "Austria".
    """
    wanted = fold(city)
    matches = [loc for loc in db.find("locations", order_by="city") if fold(loc["city"]) == wanted]
    if country:
        place = COUNTRY_ALIASES.get(fold(country), fold(country))
        matches = [loc for loc in matches if place in [fold(loc["country"]), fold(loc["country_name"]), fold(loc["region"])]]
    if not matches:
        raise ToolError(f"no forecast location called {city}" + (f" in {country}" if country else ""))
    return [{"location_id": loc["location_id"], "city": loc["city"], "region": loc["region"],
             "country": loc["country"], "country_name": loc["country_name"], "timezone": loc["timezone"]}
            for loc in matches]


@tool("read")
def get_location(location_id: str) -> dict:
    """Show a location in full: coordinates, elevation, timezone, climate zone and its August climate normals.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
    """
    location = location_of(location_id)
    details = dict(location)
    details["normal_mean_c"] = round((location["normal_high_c"] + location["normal_low_c"]) / 2, 1)
    return details


@tool("read")
def list_activities() -> list:
    """List the outdoor activities the planner knows, with the conditions each one prefers."""
    return db.find("activities", order_by="activity_id")


# ---------------------------------------------------------------- forecasts

@tool("read")
def get_forecast(location_id: str, date: str) -> dict:
    """The daily forecast for one location and date (today up to 6 days ahead).

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        date: The day, YYYY-MM-DD, e.g. "2026-08-05".
    """
    row = forecast_of(location_id, date)
    view = forecast_view(row)
    view.update({"location_id": location_id, "location": label(location_of(location_id)), "issued_at": row["issued_at"]})
    return view


@tool("read")
def get_forecast_range(location_id: str, start_date: str, end_date: str) -> dict:
    """The daily forecasts for a run of days, with a summary.

    In the summary a dry day is one whose precipitation probability is below 30%.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        start_date: First day, YYYY-MM-DD, e.g. "2026-08-04".
        end_date: Last day, YYYY-MM-DD, e.g. "2026-08-07".
    """
    rows = forecasts_between(location_id, start_date, end_date)
    days = [forecast_view(r) for r in rows]
    summary = {"days": len(rows),
               "avg_temp_max_c": round(sum([r["temp_max_c"] for r in rows]) / len(rows), 1),
               "highest_temp_c": max([r["temp_max_c"] for r in rows]),
               "lowest_temp_c": min([r["temp_min_c"] for r in rows]),
               "total_precip_mm": round(sum([r["precip_mm"] for r in rows]), 1),
               "dry_days": len([r for r in rows if r["precip_probability_pct"] < DRY_DAY_PROBABILITY])}
    return {"location_id": location_id, "location": label(location_of(location_id)), "start_date": start_date,
            "end_date": end_date, "days": days, "summary": summary}


@tool("read")
def forecast_extremes(location_id: str, start_date: str, end_date: str,
                      measure: Literal["hottest", "coldest", "wettest", "windiest"]) -> dict:
    """Pick the most extreme forecast day of a range.

    hottest: highest maximum temperature; coldest: lowest minimum temperature; wettest: most
    precipitation in mm (then the higher probability); windiest: strongest gusts. Ties go to the
    earliest day. When no precipitation is forecast at all, wettest returns no date.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        start_date: First day, YYYY-MM-DD, e.g. "2026-08-04".
        end_date: Last day, YYYY-MM-DD, e.g. "2026-08-09".
        measure: Which extreme to find, e.g. "hottest".
    """
    rows = forecasts_between(location_id, start_date, end_date)
    result = {"location_id": location_id, "location": label(location_of(location_id)), "measure": measure,
              "start_date": start_date, "end_date": end_date, "days_considered": len(rows)}
    if measure == "hottest":
        best = pick_extreme(rows, lambda r: r["temp_max_c"], True)
        value, unit = best["temp_max_c"], "°C (maximum)"
    elif measure == "coldest":
        best = pick_extreme(rows, lambda r: r["temp_min_c"], False)
        value, unit = best["temp_min_c"], "°C (minimum)"
    elif measure == "wettest":
        best = pick_extreme(rows, lambda r: r["precip_mm"] * 1000 + r["precip_probability_pct"], True)
        value, unit = best["precip_mm"], "mm"
        if best["precip_mm"] <= 0:
            result.update({"date": None, "value": 0.0, "unit": unit,
                           "note": "no precipitation is forecast on any of these days"})
            return result
    else:
        best = pick_extreme(rows, lambda r: r["wind_gust_kmh"], True)
        value, unit = best["wind_gust_kmh"], "km/h (gusts)"
    result.update({"date": best["forecast_date"], "value": value, "unit": unit, "condition": best["condition"]})
    return result


@tool("read")
def compare_locations(location_id_a: str, location_id_b: str, date: str) -> dict:
    """Compare the forecasts of two locations on one day: which is warmer, which is drier.

    Warmer means the higher maximum temperature. Drier means the lower precipitation probability,
    then the smaller amount; when both are equal the answer is "neither".

    Args:
        location_id_a: The first location's id, e.g. "LOC-000009".
        location_id_b: The second location's id, e.g. "LOC-000010".
        date: The day, YYYY-MM-DD, e.g. "2026-08-06".
    """
    if location_id_a == location_id_b:
        raise ToolError("give two different locations to compare")
    a = forecast_of(location_id_a, date)
    b = forecast_of(location_id_b, date)
    name_a = label(location_of(location_id_a))
    name_b = label(location_of(location_id_b))
    if a["temp_max_c"] == b["temp_max_c"]:
        warmer = "neither"
    else:
        warmer = name_a if a["temp_max_c"] > b["temp_max_c"] else name_b
    key_a = [a["precip_probability_pct"], a["precip_mm"]]
    key_b = [b["precip_probability_pct"], b["precip_mm"]]
    if key_a == key_b:
        drier = "neither"
    else:
        drier = name_a if key_a < key_b else name_b
    view_a = forecast_view(a)
    view_a["location"] = name_a
    view_b = forecast_view(b)
    view_b["location"] = name_b
    return {"date": date, "a": view_a, "b": view_b, "warmer": warmer,
            "temp_max_difference_c": round(abs(a["temp_max_c"] - b["temp_max_c"]), 1), "drier": drier,
            "precip_probability_difference_pct": abs(a["precip_probability_pct"] - b["precip_probability_pct"])}


@tool("read")
def best_day_for_activity(location_id: str, activity: str, start_date: str, end_date: str) -> dict:
    """Score each forecast day of a range for an outdoor activity and name the best day.

    Scoring rule, per day, from the activity's preferences (see list_activities):
    start at 100; subtract the precipitation probability (in %); subtract 3 points per °C the
    maximum temperature lies outside the ideal range; subtract 2 points per km/h the wind speed
    lies above the activity's maximum wind or below its minimum wind; for sun-exposed activities
    subtract 5 points per UV index step above 8. Round to a whole number, never below 0. A day
    touched by a red alert for the location scores 0. The best day has the highest score; ties go
    to the earliest day.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        activity: The activity's id, e.g. "hiking".
        start_date: First day, YYYY-MM-DD, e.g. "2026-08-04".
        end_date: Last day, YYYY-MM-DD, e.g. "2026-08-08".
    """
    wanted = fold(activity).replace(" ", "_")
    profiles = [a for a in db.find("activities") if a["activity_id"] == wanted or fold(a["name"]) == fold(activity)]
    if not profiles:
        raise ToolError(f"unknown activity {activity}; see list_activities")
    profile = profiles[0]
    rows = forecasts_between(location_id, start_date, end_date)
    red_alerts = [a for a in db.find("alerts", {"location_id": location_id, "status": "issued", "severity": "red"})]
    days = []
    for row in rows:
        tmax = row["temp_max_c"]
        temp_gap = max(0.0, profile["ideal_temp_min_c"] - tmax, tmax - profile["ideal_temp_max_c"])
        wind_gap = max(0, row["wind_speed_kmh"] - profile["max_wind_kmh"], profile["min_wind_kmh"] - row["wind_speed_kmh"])
        score = 100 - row["precip_probability_pct"] - 3 * temp_gap - 2 * wind_gap
        if profile["sun_exposed"] and row["uv_index"] > 8:
            score -= 5 * (row["uv_index"] - 8)
        score = max(0, int(round(score)))
        blocked = [a["alert_id"] for a in red_alerts if covers_day(a, row["forecast_date"])]
        if blocked:
            score = 0
        days.append({"date": row["forecast_date"], "score": score, "condition": row["condition"],
                     "temp_max_c": tmax, "precip_probability_pct": row["precip_probability_pct"],
                     "wind_speed_kmh": row["wind_speed_kmh"], "uv_index": row["uv_index"], "red_alerts": blocked})
    best = days[0]
    for day in days[1:]:
        if day["score"] > best["score"]:
            best = day
    return {"location_id": location_id, "location": label(location_of(location_id)),
            "activity": profile["activity_id"], "best_date": best["date"], "best_score": best["score"], "days": days}


@tool("read")
def get_sun_times(location_id: str, date: str) -> dict:
    """Sunrise, sunset and day length at a location on a forecast day, in local time.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        date: The day, YYYY-MM-DD, e.g. "2026-08-05".
    """
    row = forecast_of(location_id, date)
    location = location_of(location_id)
    length = minutes_of(row["sunset"]) - minutes_of(row["sunrise"])
    return {"location_id": location_id, "location": label(location), "date": date, "timezone": location["timezone"],
            "sunrise": row["sunrise"], "sunset": row["sunset"], "day_length": duration_text(length),
            "day_length_minutes": length}


@tool("read")
def get_uv_advice(location_id: str, date: str) -> dict:
    """The forecast UV index on a day with its WHO category, the sunscreen to use and advice.

    Categories: low 0-2 (SPF 15), moderate 3-5 (SPF 30), high 6-7 (SPF 30), very high 8-10 (SPF 50),
    extreme 11+ (SPF 50+).

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        date: The day, YYYY-MM-DD, e.g. "2026-08-05".
    """
    row = forecast_of(location_id, date)
    band = uv_band(row["uv_index"])
    return {"location_id": location_id, "location": label(location_of(location_id)), "date": date,
            "uv_index": row["uv_index"], "category": band[1], "recommended_spf": band[2], "advice": band[3]}


# ---------------------------------------------------------------- alerts

@tool("read")
def list_alerts(location_id: str, include_upcoming: bool | None = None) -> list:
    """Weather alerts for a location that are in force now, and optionally those that start later.

    Cancelled and expired alerts are never listed. Sorted by start time.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        include_upcoming: Also list issued alerts that have not started yet, e.g. true.
    """
    location_of(location_id)
    wanted = ["in_force", "upcoming"] if include_upcoming else ["in_force"]
    rows = db.find("alerts", {"location_id": location_id}, order_by="valid_from")
    return [alert_view(a) for a in rows if alert_state(a) in wanted]


# ---------------------------------------------------------------- observations

@tool("read")
def get_observations(location_id: str, start_date: str, end_date: str) -> list:
    """Measured daily weather for past days (the last 26 days, up to yesterday).

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        start_date: First day, YYYY-MM-DD, e.g. "2026-07-20".
        end_date: Last day, YYYY-MM-DD, e.g. "2026-07-22".
    """
    return [observation_view(r) for r in observations_between(location_id, start_date, end_date)]


@tool("read")
def average_temperature(location_id: str, days: int) -> dict:
    """Average measured temperatures over the last N completed days, compared with the climate normal.

    The period ends yesterday. A day's mean is the average of its maximum and minimum; the anomaly
    is the period's average mean minus the normal mean (average of the normal high and low).

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        days: How many days back, 1 to 26, e.g. 14.
    """
    if days < 1 or days > HISTORY_DAYS:
        raise ToolError(f"averages cover 1 to {HISTORY_DAYS} days")
    start = clock.add_days(clock.today(), -days)
    end = clock.add_days(clock.today(), -1)
    rows = observations_between(location_id, start, end)
    location = location_of(location_id)
    n = len(rows)
    avg_max = round(sum([r["temp_max_c"] for r in rows]) / n, 1)
    avg_min = round(sum([r["temp_min_c"] for r in rows]) / n, 1)
    avg_mean = round(sum([(r["temp_max_c"] + r["temp_min_c"]) / 2 for r in rows]) / n, 1)
    normal_mean = round((location["normal_high_c"] + location["normal_low_c"]) / 2, 1)
    anomaly = round(avg_mean - normal_mean, 1)
    return {"location_id": location_id, "location": label(location), "start_date": start, "end_date": end,
            "days": n, "avg_temp_max_c": avg_max, "avg_temp_min_c": avg_min, "avg_temp_mean_c": avg_mean,
            "normal_mean_c": normal_mean, "anomaly_c": anomaly,
            "compared_to_normal": "warmer" if anomaly > 0 else ("colder" if anomaly < 0 else "normal")}


@tool("read")
def count_rainy_days(location_id: str, start_date: str, end_date: str) -> dict:
    """Count the rainy days of a past period: a rainy day had at least 1.0 mm of measured precipitation.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        start_date: First day, YYYY-MM-DD, e.g. "2026-07-10".
        end_date: Last day, YYYY-MM-DD, e.g. "2026-07-24".
    """
    rows = observations_between(location_id, start_date, end_date)
    rainy = [r["obs_date"] for r in rows if r["precip_mm"] >= RAINY_DAY_MM]
    return {"location_id": location_id, "location": label(location_of(location_id)), "start_date": start_date,
            "end_date": end_date, "days": len(rows), "rainy_days": len(rainy), "dry_days": len(rows) - len(rainy),
            "rainy_dates": rainy, "total_precip_mm": round(sum([r["precip_mm"] for r in rows]), 1)}


@tool("read")
def observation_records(location_id: str, start_date: str, end_date: str) -> dict:
    """The records of a past period: highest maximum, lowest minimum, wettest day and strongest gust.

    Ties go to the earliest day.

    Args:
        location_id: The location's id, e.g. "LOC-000013".
        start_date: First day, YYYY-MM-DD, e.g. "2026-07-10".
        end_date: Last day, YYYY-MM-DD, e.g. "2026-08-02".
    """
    rows = observations_between(location_id, start_date, end_date)
    hot = pick_extreme(rows, lambda r: r["temp_max_c"], True)
    cold = pick_extreme(rows, lambda r: r["temp_min_c"], False)
    wet = pick_extreme(rows, lambda r: r["precip_mm"], True)
    gust = pick_extreme(rows, lambda r: r["max_gust_kmh"], True)
    return {"location_id": location_id, "location": label(location_of(location_id)), "start_date": start_date,
            "end_date": end_date, "days": len(rows),
            "highest_max": {"date": hot["obs_date"], "temp_c": hot["temp_max_c"]},
            "lowest_min": {"date": cold["obs_date"], "temp_c": cold["temp_min_c"]},
            "wettest_day": {"date": wet["obs_date"] if wet["precip_mm"] > 0 else None, "precip_mm": wet["precip_mm"]},
            "strongest_gust": {"date": gust["obs_date"], "gust_kmh": gust["max_gust_kmh"]}}


# ---------------------------------------------------------------- subscribers

@tool("read")
def find_subscriber_by_email(email: str) -> dict:
    """Find an alert subscriber's id from the email address on the account.

    Args:
        email: The account's email address, e.g. "lena.vogel21@mail.com".
    """
    row = db.one("subscribers", {"email": email.strip().lower()})
    return {"subscriber_id": row["subscriber_id"], "first_name": row["first_name"],
            "last_name": row["last_name"]}


@tool("write")
def verify_subscriber(subscriber_id: str, phone_last4: str, postcode: str) -> dict:
    """Verify the caller owns the account, by the last four digits of its phone number and its postcode.

    Required once per conversation before subscription data is shown or changed.

    Args:
        subscriber_id: The subscriber's id, e.g. "USR-000017".
        phone_last4: The last four digits of the phone number on file, e.g. "4821".
        postcode: The postcode on file, e.g. "SW1A 1AA".
    """
    subscriber = db.get("subscribers", subscriber_id)
    digits = digits_of(subscriber["phone"])
    if digits[-4:] != phone_last4.strip() or normal_postcode(subscriber["postcode"]) != normal_postcode(postcode):
        raise ToolError("identity could not be verified with the details given")
    done = db.find("verifications", {"subscriber_id": subscriber_id})
    if done:
        return {"subscriber_id": subscriber_id, "verified": True, "verification_id": done[0]["verification_id"]}
    check = db.insert("verifications", {"subscriber_id": subscriber_id, "verified_at": clock.now(),
                                        "method": "phone_and_postcode"})
    return {"subscriber_id": subscriber_id, "verified": True, "verification_id": check["verification_id"]}


@tool("read")
def list_subscriptions(subscriber_id: str) -> dict:
    """A verified subscriber's plan, account status and alert subscriptions.

    Args:
        subscriber_id: The subscriber's id, e.g. "USR-000017".
    """
    subscriber = verified_subscriber(subscriber_id)
    rows = db.find("subscriptions", {"subscriber_id": subscriber_id}, order_by="created_on")
    return {"subscriber_id": subscriber_id, "plan": subscriber["plan"], "status": subscriber["status"],
            "max_subscriptions": PLAN_LIMITS[subscriber["plan"]], "subscriptions": [subscription_view(s) for s in rows]}


@tool("write")
def subscribe_to_alerts(subscriber_id: str, location_id: str,
                        alert_type: Literal["heat", "storm", "flood", "frost", "wind"],
                        min_severity: Literal["yellow", "orange", "red"],
                        channel: Literal["email", "sms", "push"]) -> dict:
    """Subscribe to one type of weather alert for a location.

    Free accounts hold at most 3 subscriptions, plus accounts 10; one subscription per location and
    alert type; SMS delivery is for plus accounts only.

    Args:
        subscriber_id: The subscriber's id, e.g. "USR-000017".
        location_id: The location's id, e.g. "LOC-000013".
        alert_type: The kind of alert, e.g. "storm".
        min_severity: The lowest severity that is sent, e.g. "orange".
        channel: How alerts are delivered, e.g. "email".
    """
    subscriber = active_subscriber(subscriber_id)
    location = location_of(location_id)
    check_channel(subscriber, channel)
    held = db.find("subscriptions", {"subscriber_id": subscriber_id})
    if [s for s in held if s["location_id"] == location_id and s["alert_type"] == alert_type]:
        raise ToolError(f"already subscribed to {alert_type} alerts for {label(location)}; change that subscription instead")
    limit = PLAN_LIMITS[subscriber["plan"]]
    if len(held) >= limit:
        raise ToolError(f"{subscriber['plan']} accounts hold at most {limit} subscriptions; remove one first")
    row = db.insert("subscriptions", {"subscriber_id": subscriber_id, "location_id": location_id,
                                      "alert_type": alert_type, "min_severity": min_severity, "channel": channel,
                                      "created_on": clock.today()})
    view = subscription_view(row)
    view["subscriptions_held"] = len(held) + 1
    view["max_subscriptions"] = limit
    return view


@tool("write")
def update_alert_subscription(subscriber_id: str, subscription_id: str,
                              min_severity: Literal["yellow", "orange", "red"] | None = None,
                              channel: Literal["email", "sms", "push"] | None = None) -> dict:
    """Change the minimum severity (threshold) and/or the delivery channel of a subscription.

    Args:
        subscriber_id: The subscriber's id, e.g. "USR-000017".
        subscription_id: The subscription's id, e.g. "SUB-000031".
        min_severity: The new lowest severity that is sent, e.g. "red".
        channel: The new delivery channel, e.g. "push".
    """
    subscriber = active_subscriber(subscriber_id)
    subscription = owned_subscription(subscriber_id, subscription_id)
    changes = {}
    if min_severity is not None and min_severity != subscription["min_severity"]:
        changes["min_severity"] = min_severity
    if channel is not None and channel != subscription["channel"]:
        check_channel(subscriber, channel)
        changes["channel"] = channel
    if not changes:
        raise ToolError("nothing to change: give a severity or channel different from the current one")
    return subscription_view(db.update("subscriptions", subscription_id, changes))


@tool("write")
def unsubscribe_from_alerts(subscriber_id: str, subscription_id: str) -> dict:
    """Delete one of the subscriber's alert subscriptions (allowed for suspended accounts too).

    Args:
        subscriber_id: The subscriber's id, e.g. "USR-000017".
        subscription_id: The subscription's id, e.g. "SUB-000031".
    """
    subscriber = verified_subscriber(subscriber_id)
    subscription = owned_subscription(subscriber_id, subscription_id)
    view = subscription_view(subscription)
    db.delete("subscriptions", subscription_id)
    left = db.count("subscriptions", {"subscriber_id": subscriber_id})
    return {"removed": subscription_id, "location": view["location"], "alert_type": view["alert_type"],
            "subscriptions_left": left, "max_subscriptions": PLAN_LIMITS[subscriber["plan"]]}


@tool("write")
def report_observation(subscriber_id: str, location_id: str, observed_on: str, temperature_c: float,
                       condition: Literal["sunny", "partly_cloudy", "cloudy", "fog", "showers", "rain",
                                          "thunderstorm", "hail", "snow"],
                       precipitation_mm: float | None = None) -> dict:
    """Record a subscriber's own report of today's weather at a location (community observations).

    Reports are for today only, one per subscriber and location per day. The temperature must lie
    within 8 °C of today's forecast range for the location, precipitation between 0 and 100 mm,
    and precipitation above 0 needs a wet condition (showers, rain, thunderstorm, hail or snow).

    Args:
        subscriber_id: The subscriber's id, e.g. "USR-000017".
        location_id: The location's id, e.g. "LOC-000013".
        observed_on: The day observed, which must be today, e.g. "2026-08-03".
        temperature_c: The temperature the subscriber measured, in °C, e.g. 24.5.
        condition: What the sky is doing, e.g. "cloudy".
        precipitation_mm: Rain collected so far today in mm, e.g. 2.5.
    """
    active_subscriber(subscriber_id)
    location = location_of(location_id)
    if observed_on != clock.today():
        raise ToolError(f"reports are accepted only for today, {clock.today()}")
    today = forecast_of(location_id, observed_on)
    low = round(today["temp_min_c"] - REPORT_TEMP_MARGIN, 1)
    high = round(today["temp_max_c"] + REPORT_TEMP_MARGIN, 1)
    if temperature_c < low or temperature_c > high:
        raise ToolError(f"{temperature_c} °C is implausible for {label(location)} today; reports must lie "
                        f"between {low} and {high} °C")
    rain = 0.0 if precipitation_mm is None else precipitation_mm
    if rain < 0 or rain > REPORT_MAX_PRECIP_MM:
        raise ToolError(f"precipitation must be between 0 and {REPORT_MAX_PRECIP_MM:.0f} mm")
    if rain > 0 and condition not in WET_CONDITIONS:
        raise ToolError(f"{rain} mm of precipitation does not fit a {condition} sky; pick a wet condition")
    if db.find("user_reports", {"subscriber_id": subscriber_id, "location_id": location_id, "observed_on": observed_on}):
        raise ToolError(f"you already reported the weather in {label(location)} today")
    row = db.insert("user_reports", {"subscriber_id": subscriber_id, "location_id": location_id,
                                     "observed_on": observed_on, "reported_at": clock.now(),
                                     "temperature_c": round(temperature_c, 1), "condition": condition,
                                     "precipitation_mm": round(rain, 1)})
    row["location"] = label(location)
    row["forecast_temp_max_c"] = today["temp_max_c"]
    row["difference_from_forecast_max_c"] = round(row["temperature_c"] - today["temp_max_c"], 1)
    return row


@tool("write")
def acknowledge_alert(subscriber_id: str, alert_id: str) -> dict:
    """Acknowledge an alert so that its reminders stop.

    Only alerts in force or upcoming can be acknowledged, only by a subscriber holding a
    subscription for the alert's location and type whose minimum severity the alert reaches,
    and only once.

    Args:
        subscriber_id: The subscriber's id, e.g. "USR-000017".
        alert_id: The alert's id, e.g. "ALR-000008".
    """
    active_subscriber(subscriber_id)
    alert = db.get("alerts", alert_id)
    state = alert_state(alert)
    if state not in ["in_force", "upcoming"]:
        raise ToolError(f"alert {alert_id} is {state}; only alerts in force or upcoming can be acknowledged")
    held = [s for s in db.find("subscriptions", {"subscriber_id": subscriber_id, "location_id": alert["location_id"]})
            if s["alert_type"] == alert["alert_type"]]
    if not held:
        raise ToolError(f"you have no {alert['alert_type']} subscription for this location; subscribe first")
    if SEVERITIES.index(alert["severity"]) < SEVERITIES.index(held[0]["min_severity"]):
        raise ToolError(f"this {alert['severity']} alert is below your subscription's minimum severity "
                        f"({held[0]['min_severity']}); it is not sent to you")
    if db.find("alert_acknowledgements", {"subscriber_id": subscriber_id, "alert_id": alert_id}):
        raise ToolError(f"alert {alert_id} is already acknowledged")
    row = db.insert("alert_acknowledgements", {"alert_id": alert_id, "subscriber_id": subscriber_id,
                                               "acknowledged_at": clock.now()})
    view = alert_view(alert)
    view["acknowledgement_id"] = row["acknowledgement_id"]
    return view


@tool("write")
def transfer_to_human_agents(reason: Literal["severe_weather_report", "other"], summary: str | None = None) -> dict:
    """Hand the caller over to a human agent (the duty forecaster), when the policy says a request is theirs.

    Args:
        reason: Why the caller is handed over, e.g. "severe_weather_report".
        summary: A short note of the request for the human agent, e.g. "hail with 18 mm in Berlin now".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
