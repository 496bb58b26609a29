"""Rail passenger help-desk tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

FARE_RATES = {"advance": 0.12, "off_peak": 0.21, "anytime": 0.32}
OFF_PEAK_FROM = "09:30"
REFUND_ADMIN_FEE = 10.0
ADVANCE_CHANGE_FEE = 10.0
COMPENSATION_WINDOW_DAYS = 28
COMPENSATION_TIERS = [[60, 100], [30, 50], [15, 25]]
ASSISTANCE_NOTICE_MINUTES = 120
COACHES = ["B", "C", "D", "E", "F", "G", "H"]
SEATS_PER_COACH = 64
RAILCARD_PRICES = {"16_25": {1: 35.0}, "26_30": {1: 35.0}, "senior": {1: 35.0, 3: 80.0},
                   "disabled": {1: 20.0, 3: 54.0}, "network": {1: 30.0}}
RAILCARD_RENEWAL_DAYS = 30
SEASON_WEEKLY_RATE = 1.2
SEASON_MULTIPLIERS = {"weekly": 1.0, "monthly": 3.84, "annual": 40.0}
SEASON_START_WINDOW_DAYS = 30
MONTH_LENGTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


# ---------------------------------------------------------------- helpers

def minutes_of(moment):
    return int(moment[11:13]) * 60 + int(moment[14:16])


def minutes_until(moment):
    days = clock.days_between(clock.today(), moment[:10])
    return days * 1440 + minutes_of(moment) - minutes_of(clock.now())


def has_departed(service):
    return minutes_until(service["departs_at"]) <= 0


def age_on(date_of_birth, day):
    years = int(day[:4]) - int(date_of_birth[:4])
    if day[5:] < date_of_birth[5:]:
        years = years - 1
    return years


def days_in_month(year, month):
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return MONTH_LENGTHS[month - 1]


def same_day_months_later(day, months):
    year = int(day[:4])
    month = int(day[5:7]) + months
    while month > 12:
        month = month - 12
        year = year + 1
    dom = min(int(day[8:10]), days_in_month(year, month))
    return f"{year}-{str(month).zfill(2)}-{str(dom).zfill(2)}"


def passenger_of(passenger_id):
    return db.get("passengers", passenger_id)


def owned_ticket(passenger_id, ticket_id):
    passenger_of(passenger_id)
    ticket = db.owned("tickets", ticket_id, "passenger_id", passenger_id)
    return ticket


def active_ticket(passenger_id, ticket_id):
    ticket = owned_ticket(passenger_id, ticket_id)
    if ticket["status"] != "active":
        raise ToolError(f"ticket {ticket_id} is {ticket['status']}; only active tickets can be refunded, "
                        "changed or given reservations")
    return ticket


def upcoming_service(service):
    if service["status"] == "cancelled":
        raise ToolError(f"service {service['train_number']} on {service['service_date']} is cancelled")
    if has_departed(service):
        raise ToolError(f"service {service['train_number']} departed at {service['departs_at']}")
    return service


def route_between(origin_code, destination_code):
    route_id = f"{origin_code.strip().upper()}-{destination_code.strip().upper()}"
    routes = db.find("routes", {"route_id": route_id})
    if not routes:
        raise ToolError(f"there is no direct route from {origin_code} to {destination_code}")
    return routes[0]


def service_view(service):
    route = db.get("routes", service["route_id"])
    return {"service_id": service["service_id"], "train_number": service["train_number"],
            "origin_code": route["origin_code"], "destination_code": route["destination_code"],
            "service_date": service["service_date"], "departs_at": service["departs_at"],
            "arrives_at": service["arrives_at"], "distance_km": service["distance_km"],
            "status": service["status"], "delay_minutes": service["delay_minutes"],
            "seats_left": service["seats_left"], "bike_spaces_left": service["bike_spaces_left"]}


def ticket_view(ticket):
    service = db.get("services", ticket["service_id"])
    route = db.get("routes", service["route_id"])
    view = dict(ticket)
    view.update({"train_number": service["train_number"], "origin_code": route["origin_code"],
                 "destination_code": route["destination_code"], "service_date": service["service_date"],
                 "departs_at": service["departs_at"]})
    bookings = [b for b in db.find("assistance_bookings", {"ticket_id": ticket["ticket_id"]})
                if b["status"] == "confirmed"]
    view["assistance"] = bookings[0]["assistance_type"] if bookings else None
    return view


def railcard_valid_on(passenger_id, day):
    for card in db.find("railcards", {"passenger_id": passenger_id}, order_by="-expires_on"):
        if card["valid_from"] <= day <= card["expires_on"]:
            return card
    return None


def fare_problem(service, fare_type):
    if fare_type == "off_peak" and service["departs_at"][11:16] < OFF_PEAK_FROM:
        return f"off-peak fares are only valid on departures from {OFF_PEAK_FROM}"
    if fare_type == "advance" and service["service_date"] <= clock.today():
        return "advance fares must be bought before the day of travel"
    return None


def price_fare(service, fare_type, railcard):
    base = round(service["distance_km"] * FARE_RATES[fare_type], 2)
    discount = 0.0
    if railcard and (railcard["card_type"] != "network" or fare_type == "off_peak"):
        discount = round(base / 3, 2)
    return base, discount, round(base - discount, 2)


def compensation_problem(ticket, service):
    if ticket["status"] not in ["active", "used"]:
        return f"ticket {ticket['ticket_id']} is {ticket['status']}; it cannot earn compensation"
    if service["status"] == "cancelled":
        return "the service was cancelled: the ticket is refunded in full instead of compensated"
    if not has_departed(service):
        return "the journey has not happened yet"
    if service["status"] != "delayed" or service["delay_minutes"] < 15:
        return f"the service was {service['delay_minutes']} minutes late; compensation starts at 15 minutes"
    if clock.days_between(service["service_date"], clock.today()) > COMPENSATION_WINDOW_DAYS:
        return f"claims must be made within {COMPENSATION_WINDOW_DAYS} days of the journey"
    return None


def compensation_percent(delay_minutes):
    for tier in COMPENSATION_TIERS:
        if delay_minutes >= tier[0]:
            return tier[1]
    return 0


def release_reservations(ticket, service):
    """Give back the seat and bike space of a ticket that stops being valid, and cancel its assistance."""
    changes = {}
    if service["status"] != "cancelled" and not has_departed(service):
        changes["seats_left"] = service["seats_left"] + 1
        if ticket["bike_reserved"]:
            changes["bike_spaces_left"] = service["bike_spaces_left"] + 1
    if changes:
        db.update("services", service["service_id"], changes)
    for booking in db.find("assistance_bookings", {"ticket_id": ticket["ticket_id"], "status": "confirmed"}):
        db.update("assistance_bookings", booking["assistance_id"], {"status": "cancelled"})


def season_end(start, duration):
    if duration == "weekly":
        return clock.add_days(start, 6)
    months = 1 if duration == "monthly" else 12
    return clock.add_days(same_day_months_later(start, months), -1)


def season_price(route, duration):
    return round(route["distance_km"] * SEASON_WEEKLY_RATE * SEASON_MULTIPLIERS[duration], 2)


# ---------------------------------------------------------------- passengers

def public_passenger(passenger):
    return {"passenger_id": passenger["passenger_id"], "first_name": passenger["first_name"],
            "last_name": passenger["last_name"]}


@tool("read")
def find_passenger_by_email(email: str) -> dict:
    """Find a passenger's id from the email address on their account.

    Args:
        email: The passenger's email address, e.g. "olivia.hughes12@gmail.com".
    """
    return public_passenger(db.one("passengers", {"email": email.strip().lower()}, "passenger account"))


@tool("read")
def find_passenger_by_name(first_name: str, last_name: str, date_of_birth: str) -> dict:
    """Find a passenger's id from their full name and date of birth.

    Args:
        first_name: Given name, e.g. "Olivia".
        last_name: Family name, e.g. "Hughes".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1988-07-21".
    """
    rows = db.find("passengers", {"first_name": first_name.strip(), "last_name": last_name.strip(),
                                  "date_of_birth": date_of_birth.strip()})
    if not rows:
        raise ToolError(f"no passenger named {first_name} {last_name} born {date_of_birth}")
    if len(rows) > 1:
        raise ToolError("more than one passenger matches; ask for the email address instead")
    return public_passenger(rows[0])


@tool("read")
def get_passenger_profile(passenger_id: str) -> dict:
    """Show a passenger's profile: contact details, date of birth, disability evidence and today's railcard.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
    """
    profile = passenger_of(passenger_id)
    card = railcard_valid_on(passenger_id, clock.today())
    profile["current_railcard"] = card
    return profile


@tool("read")
def list_railcards(passenger_id: str) -> list:
    """List all railcards a passenger has bought, newest expiry first, with whether each is valid today.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
    """
    passenger_of(passenger_id)
    today = clock.today()
    cards = []
    for card in db.find("railcards", {"passenger_id": passenger_id}, order_by="-expires_on"):
        card["valid_today"] = card["valid_from"] <= today <= card["expires_on"]
        cards.append(card)
    return cards


# ---------------------------------------------------------------- network and timetable

@tool("read")
def find_stations(query: str) -> list:
    """Find stations by three-letter code, name or city (case-insensitive, partial names match).

    Args:
        query: A station code, name or city, e.g. "York".
    """
    text = query.strip().lower()
    if not text:
        raise ToolError("give a station code, name or city")
    found = []
    for station in db.find("stations", order_by="station_code"):
        if (station["station_code"].lower() == text or text in station["name"].lower()
                or text in station["city"].lower()):
            found.append(station)
    if not found:
        raise ToolError(f"no station matches '{query}'")
    return found


@tool("read")
def search_services(origin_code: str, destination_code: str, service_date: str) -> list:
    """List the direct trains between two stations on one date, earliest first, with status and seats left.

    Args:
        origin_code: Departure station code, e.g. "KGX".
        destination_code: Arrival station code, e.g. "YRK".
        service_date: Travel date as YYYY-MM-DD, e.g. "2026-04-20".
    """
    route = route_between(origin_code, destination_code)
    services = db.find("services", {"route_id": route["route_id"], "service_date": service_date.strip()},
                       order_by="departs_at")
    return [service_view(s) for s in services]


@tool("read")
def get_service_status(train_number: str, service_date: str) -> dict:
    """Show the running status of one train: on time, delayed (with minutes) or cancelled, and its platform.

    Args:
        train_number: The train's number (headcode), e.g. "1S23".
        service_date: The date it runs, YYYY-MM-DD, e.g. "2026-04-14".
    """
    rows = db.find("services", {"train_number": train_number.strip().upper(), "service_date": service_date.strip()})
    if not rows:
        raise ToolError(f"no train {train_number} runs on {service_date}")
    view = service_view(rows[0])
    view["platform"] = rows[0]["platform"]
    view["departed"] = has_departed(rows[0])
    return view


@tool("read")
def quote_fare(service_id: str, fare_type: Literal["advance", "off_peak", "anytime"],
               passenger_id: str | None = None) -> dict:
    """Quote a single fare on one service; with a passenger id, a railcard valid on the travel date is applied.

    Args:
        service_id: The service's id, e.g. "SVC-000031".
        fare_type: The fare to quote, e.g. "off_peak".
        passenger_id: Optional passenger whose railcard should be applied, e.g. "PAX-000042".
    """
    service = db.get("services", service_id)
    railcard = None
    if passenger_id:
        passenger_of(passenger_id)
        railcard = railcard_valid_on(passenger_id, service["service_date"])
    base, discount, price = price_fare(service, fare_type, railcard)
    problem = fare_problem(service, fare_type)
    return {"service_id": service_id, "train_number": service["train_number"], "fare_type": fare_type,
            "base_fare": base, "railcard_discount": discount,
            "railcard_type": railcard["card_type"] if railcard and discount else None,
            "price": price, "available": problem is None, "reason": problem}


@tool("read")
def quote_season_ticket(origin_code: str, destination_code: str,
                        duration: Literal["weekly", "monthly", "annual"]) -> dict:
    """Quote the price of a season ticket between two stations (valid both ways; railcards do not apply).

    Args:
        origin_code: One end of the route, e.g. "EUS".
        destination_code: The other end of the route, e.g. "BHM".
        duration: How long the season runs, e.g. "monthly".
    """
    route = route_between(origin_code, destination_code)
    return {"route_id": route["route_id"], "duration": duration, "price": season_price(route, duration)}


# ---------------------------------------------------------------- a passenger's travel

@tool("read")
def list_tickets(passenger_id: str, status: Literal["active", "used", "refunded", "changed"] | None = None) -> list:
    """List a passenger's tickets, earliest departure first, with train, route, seat, bike and assistance.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        status: Only tickets in this status, e.g. "active".
    """
    passenger_of(passenger_id)
    where = {"passenger_id": passenger_id}
    if status:
        where["status"] = status
    views = [ticket_view(t) for t in db.find("tickets", where)]
    return sorted(views, key=lambda v: v["departs_at"])


@tool("read")
def list_season_tickets(passenger_id: str) -> list:
    """List a passenger's season tickets with route, dates and whether each is valid today.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
    """
    passenger_of(passenger_id)
    today = clock.today()
    seasons = []
    for season in db.find("season_tickets", {"passenger_id": passenger_id}, order_by="-valid_to"):
        route = db.get("routes", season["route_id"])
        season["origin_code"] = route["origin_code"]
        season["destination_code"] = route["destination_code"]
        season["valid_today"] = season["status"] == "active" and season["valid_from"] <= today <= season["valid_to"]
        seasons.append(season)
    return seasons


@tool("read")
def check_compensation(passenger_id: str, ticket_id: str) -> dict:
    """Check whether a ticket qualifies for Delay Repay and how much it would pay, or the claim already made.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        ticket_id: The ticket's id, e.g. "TKT-000118".
    """
    ticket = owned_ticket(passenger_id, ticket_id)
    service = db.get("services", ticket["service_id"])
    claims = db.find("compensation_claims", {"ticket_id": ticket_id})
    if claims:
        return {"ticket_id": ticket_id, "eligible": False, "reason": "a claim was already made for this ticket",
                "existing_claim": claims[0]}
    problem = compensation_problem(ticket, service)
    percent = 0 if problem else compensation_percent(service["delay_minutes"])
    return {"ticket_id": ticket_id, "eligible": problem is None, "reason": problem,
            "delay_minutes": service["delay_minutes"], "percent": percent,
            "amount": round(ticket["price"] * percent / 100, 2), "existing_claim": None}


# ---------------------------------------------------------------- writes

@tool("write")
def buy_ticket(passenger_id: str, service_id: str, fare_type: Literal["advance", "off_peak", "anytime"]) -> dict:
    """Buy a single ticket on a service; a railcard valid on the travel date is applied automatically.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        service_id: The service's id, e.g. "SVC-000031".
        fare_type: The fare to buy, e.g. "anytime".
    """
    passenger_of(passenger_id)
    service = upcoming_service(db.get("services", service_id))
    if service["seats_left"] < 1:
        raise ToolError(f"service {service['train_number']} is fully booked")
    problem = fare_problem(service, fare_type)
    if problem:
        raise ToolError(problem)
    if db.find("tickets", {"passenger_id": passenger_id, "service_id": service_id, "status": "active"}):
        raise ToolError(f"passenger {passenger_id} already holds an active ticket on this service")
    railcard = railcard_valid_on(passenger_id, service["service_date"])
    base, discount, price = price_fare(service, fare_type, railcard)
    ticket = db.insert("tickets", {"service_id": service_id, "passenger_id": passenger_id, "fare_type": fare_type,
                                   "price": price, "railcard_discount": discount, "status": "active",
                                   "coach": None, "seat_number": None, "bike_reserved": False,
                                   "purchased_on": clock.today(), "replaces_ticket": None})
    db.update("services", service_id, {"seats_left": service["seats_left"] - 1})
    return ticket_view(ticket)


@tool("write")
def reserve_seat(passenger_id: str, ticket_id: str, coach: Literal["B", "C", "D", "E", "F", "G", "H"],
                 seat_number: int) -> dict:
    """Reserve a specific seat (coaches B to H, seats 1 to 64) for an active ticket; replaces any earlier seat.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        ticket_id: The ticket's id, e.g. "TKT-000118".
        coach: The coach letter, e.g. "C".
        seat_number: The seat number in that coach, e.g. 23.
    """
    ticket = active_ticket(passenger_id, ticket_id)
    upcoming_service(db.get("services", ticket["service_id"]))
    if coach not in COACHES or seat_number < 1 or seat_number > SEATS_PER_COACH:
        raise ToolError(f"seats are numbered 1 to {SEATS_PER_COACH} in coaches B to H")
    if ticket["coach"] == coach and ticket["seat_number"] == seat_number:
        raise ToolError(f"seat {coach}{seat_number} is already reserved on this ticket")
    taken = db.find("tickets", {"service_id": ticket["service_id"], "coach": coach, "seat_number": seat_number,
                                "status": "active"})
    if taken:
        raise ToolError(f"seat {coach}{seat_number} is already reserved on this train")
    return ticket_view(db.update("tickets", ticket_id, {"coach": coach, "seat_number": seat_number}))


@tool("write")
def reserve_bike_space(passenger_id: str, ticket_id: str) -> dict:
    """Reserve one of the train's bike spaces for an active ticket (free; one bike per ticket).

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        ticket_id: The ticket's id, e.g. "TKT-000118".
    """
    ticket = active_ticket(passenger_id, ticket_id)
    service = upcoming_service(db.get("services", ticket["service_id"]))
    if ticket["bike_reserved"]:
        raise ToolError(f"ticket {ticket_id} already has a bike space")
    if service["bike_spaces_left"] < 1:
        raise ToolError(f"no bike spaces are left on {service['train_number']}")
    db.update("services", service["service_id"], {"bike_spaces_left": service["bike_spaces_left"] - 1})
    db.update("tickets", ticket_id, {"bike_reserved": True})
    return {"ticket_id": ticket_id, "train_number": service["train_number"], "bike_reserved": True,
            "bike_spaces_left": service["bike_spaces_left"] - 1}


@tool("write")
def refund_ticket(passenger_id: str, ticket_id: str) -> dict:
    """Refund an active ticket to the original payment card.

    Tickets on a cancelled service are refunded in full. Otherwise only anytime and off-peak tickets are
    refunded, before departure, less a 10.00 admin fee; advance tickets are non-refundable.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        ticket_id: The ticket's id, e.g. "TKT-000118".
    """
    ticket = active_ticket(passenger_id, ticket_id)
    service = db.get("services", ticket["service_id"])
    if service["status"] == "cancelled":
        fee = 0.0
    else:
        if has_departed(service):
            raise ToolError("the train has departed; only tickets for cancelled trains are refunded after departure")
        if ticket["fare_type"] == "advance":
            raise ToolError("advance tickets are non-refundable (they can be changed to a later train for a fee)")
        fee = min(REFUND_ADMIN_FEE, ticket["price"])
    release_reservations(ticket, service)
    db.update("tickets", ticket_id, {"status": "refunded"})
    return {"ticket_id": ticket_id, "status": "refunded", "admin_fee": fee,
            "refund_amount": round(ticket["price"] - fee, 2)}


@tool("write")
def change_ticket(passenger_id: str, ticket_id: str, new_service_id: str) -> dict:
    """Move an active ticket to a later train on the same route, before the original train departs.

    Same fare type and price; advance tickets pay a 10.00 change fee unless the original train is cancelled.
    Seat, bike and assistance reservations do not carry over.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        ticket_id: The ticket to change, e.g. "TKT-000118".
        new_service_id: The later service to travel on, e.g. "SVC-000034".
    """
    ticket = active_ticket(passenger_id, ticket_id)
    old = db.get("services", ticket["service_id"])
    if has_departed(old) and old["status"] != "cancelled":
        raise ToolError("the original train has departed; tickets are changed only before departure")
    new = upcoming_service(db.get("services", new_service_id))
    if new["route_id"] != old["route_id"]:
        raise ToolError(f"tickets can only be changed to a train on the same route ({old['route_id']})")
    if new["departs_at"] <= old["departs_at"]:
        raise ToolError("tickets can only be changed to a later train")
    if new["seats_left"] < 1:
        raise ToolError(f"service {new['train_number']} is fully booked")
    if ticket["fare_type"] == "off_peak" and new["departs_at"][11:16] < OFF_PEAK_FROM:
        raise ToolError(f"off-peak tickets are only valid on departures from {OFF_PEAK_FROM}")
    if db.find("tickets", {"passenger_id": passenger_id, "service_id": new_service_id, "status": "active"}):
        raise ToolError(f"passenger {passenger_id} already holds an active ticket on that train")
    fee = ADVANCE_CHANGE_FEE if ticket["fare_type"] == "advance" and old["status"] != "cancelled" else 0.0
    release_reservations(ticket, old)
    db.update("tickets", ticket_id, {"status": "changed"})
    new_ticket = db.insert("tickets", {"service_id": new_service_id, "passenger_id": passenger_id,
                                       "fare_type": ticket["fare_type"], "price": ticket["price"],
                                       "railcard_discount": ticket["railcard_discount"], "status": "active",
                                       "coach": None, "seat_number": None, "bike_reserved": False,
                                       "purchased_on": clock.today(), "replaces_ticket": ticket_id})
    db.update("services", new_service_id, {"seats_left": new["seats_left"] - 1})
    view = ticket_view(new_ticket)
    view["change_fee"] = fee
    return view


@tool("write")
def claim_delay_compensation(passenger_id: str, ticket_id: str) -> dict:
    """Make a Delay Repay claim for a journey on a delayed train (once per ticket, within 28 days).

    Pays 25% of the ticket price for 15-29 minutes late, 50% for 30-59 and 100% for 60 or more.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        ticket_id: The ticket's id, e.g. "TKT-000118".
    """
    ticket = owned_ticket(passenger_id, ticket_id)
    if db.find("compensation_claims", {"ticket_id": ticket_id}):
        raise ToolError(f"a claim has already been made for ticket {ticket_id}")
    service = db.get("services", ticket["service_id"])
    problem = compensation_problem(ticket, service)
    if problem:
        raise ToolError(problem)
    percent = compensation_percent(service["delay_minutes"])
    return db.insert("compensation_claims", {"ticket_id": ticket_id, "delay_minutes": service["delay_minutes"],
                                             "percent": percent, "amount": round(ticket["price"] * percent / 100, 2),
                                             "status": "approved", "submitted_on": clock.today()})


@tool("write")
def buy_railcard(passenger_id: str, card_type: Literal["16_25", "26_30", "senior", "disabled", "network"],
                 years: int = 1) -> dict:
    """Buy or renew a railcard (1/3 off fares; the network card only off-peak fares).

    A new card starts today, or the day after the current card expires when renewing within 30 days of expiry.
    Eligibility is checked on the start date: 16_25 for ages 16-25, 26_30 for 26-30, senior for 60 and over,
    disabled with disability evidence on file, network for anyone 16 or over. Three-year cards exist only for
    senior and disabled.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        card_type: The railcard, e.g. "senior".
        years: How many years the card runs, 1 or 3, e.g. 1.
    """
    passenger = passenger_of(passenger_id)
    prices = RAILCARD_PRICES[card_type]
    if years not in prices:
        raise ToolError(f"a {card_type} railcard is sold for {' or '.join([str(y) for y in prices])} year(s) only")
    today = clock.today()
    start = today
    cards = db.find("railcards", {"passenger_id": passenger_id}, order_by="-expires_on")
    if cards and cards[0]["expires_on"] >= today:
        latest = cards[0]["expires_on"]
        if clock.days_between(today, latest) > RAILCARD_RENEWAL_DAYS:
            raise ToolError(f"the passenger already holds a railcard valid until {latest}; "
                            f"it can be renewed from {RAILCARD_RENEWAL_DAYS} days before expiry")
        start = clock.add_days(latest, 1)
    age = age_on(passenger["date_of_birth"], start)
    if card_type == "16_25" and not 16 <= age <= 25:
        raise ToolError(f"the 16-25 Railcard is for ages 16 to 25; the passenger is {age} on {start}")
    if card_type == "26_30" and not 26 <= age <= 30:
        raise ToolError(f"the 26-30 Railcard is for ages 26 to 30; the passenger is {age} on {start}")
    if card_type == "senior" and age < 60:
        raise ToolError(f"the Senior Railcard is for ages 60 and over; the passenger is {age} on {start}")
    if card_type == "network" and age < 16:
        raise ToolError("the Network Railcard is for ages 16 and over")
    if card_type == "disabled" and not passenger["disability_verified"]:
        raise ToolError("a Disabled Persons Railcard needs evidence of disability on file")
    expires = clock.add_days(same_day_months_later(start, 12 * years), -1)
    return db.insert("railcards", {"passenger_id": passenger_id, "card_type": card_type, "valid_from": start,
                                   "expires_on": expires, "price_paid": prices[years]})


@tool("write")
def buy_season_ticket(passenger_id: str, origin_code: str, destination_code: str,
                      duration: Literal["weekly", "monthly", "annual"], start_date: str) -> dict:
    """Buy a season ticket between two stations, starting today or up to 30 days ahead.

    Weekly seasons run 7 days, monthly ones to the day before the same date next month, annual ones a year.
    A passenger cannot hold two overlapping seasons between the same two stations.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        origin_code: One end of the route, e.g. "EUS".
        destination_code: The other end of the route, e.g. "BHM".
        duration: How long the season runs, e.g. "monthly".
        start_date: First day of validity, YYYY-MM-DD, e.g. "2026-04-20".
    """
    passenger_of(passenger_id)
    route = route_between(origin_code, destination_code)
    start = start_date.strip()
    today = clock.today()
    if clock.days_between(today, start) < 0:
        raise ToolError("a season ticket cannot start in the past")
    if clock.days_between(today, start) > SEASON_START_WINDOW_DAYS:
        raise ToolError(f"a season ticket can start at most {SEASON_START_WINDOW_DAYS} days ahead")
    end = season_end(start, duration)
    pair = sorted([route["origin_code"], route["destination_code"]])
    for season in db.find("season_tickets", {"passenger_id": passenger_id, "status": "active"}):
        other = db.get("routes", season["route_id"])
        if sorted([other["origin_code"], other["destination_code"]]) != pair:
            continue
        if season["valid_from"] <= end and start <= season["valid_to"]:
            raise ToolError(f"season {season['season_id']} already covers this route from {season['valid_from']} "
                            f"to {season['valid_to']}")
    season = db.insert("season_tickets", {"passenger_id": passenger_id, "route_id": route["route_id"],
                                          "duration": duration, "valid_from": start, "valid_to": end,
                                          "price": season_price(route, duration), "status": "active"})
    season["origin_code"] = route["origin_code"]
    season["destination_code"] = route["destination_code"]
    return season


@tool("write")
def book_assistance(passenger_id: str, ticket_id: str,
                    assistance_type: Literal["wheelchair", "walking_support", "visual_impairment",
                                             "hearing_impairment", "luggage"]) -> dict:
    """Book Passenger Assist for the journey of an active ticket, at least 2 hours before departure.

    Wheelchair assistance needs step-free access at both stations. One booking per ticket.

    Args:
        passenger_id: The passenger's id, e.g. "PAX-000042".
        ticket_id: The ticket's id, e.g. "TKT-000118".
        assistance_type: The help needed, e.g. "walking_support".
    """
    ticket = active_ticket(passenger_id, ticket_id)
    service = upcoming_service(db.get("services", ticket["service_id"]))
    if minutes_until(service["departs_at"]) < ASSISTANCE_NOTICE_MINUTES:
        raise ToolError("assistance must be booked at least 2 hours before departure")
    if db.find("assistance_bookings", {"ticket_id": ticket_id, "status": "confirmed"}):
        raise ToolError(f"assistance is already booked for ticket {ticket_id}")
    route = db.get("routes", service["route_id"])
    origin = db.get("stations", route["origin_code"])
    destination = db.get("stations", route["destination_code"])
    if assistance_type == "wheelchair":
        blocked = [s["name"] for s in [origin, destination] if not s["step_free"]]
        if blocked:
            raise ToolError(f"wheelchair assistance needs step-free access; {', '.join(blocked)} has none")
    booking = db.insert("assistance_bookings", {"ticket_id": ticket_id, "assistance_type": assistance_type,
                                                "meeting_point": f"{origin['name']} assistance point",
                                                "status": "confirmed", "booked_at": clock.now()})
    booking["train_number"] = service["train_number"]
    booking["departs_at"] = service["departs_at"]
    return booking


@tool("write")
def transfer_to_human_agents(reason: Literal["long_delay_claim", "other"], summary: str | None = None) -> dict:
    """Hand the passenger over to a human agent, when the policy says a request is theirs to handle.

    Args:
        reason: Why the passenger is handed over, e.g. "long_delay_claim".
        summary: A short note of the request for the human agent, e.g. "Delay Repay for a train 75 minutes late".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
