"""Restaurant group guest-line tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
A_MONDAY = "2026-01-05"
ALLERGENS = ["gluten", "crustaceans", "molluscs", "egg", "fish", "peanuts", "soy", "milk", "tree_nuts",
             "celery", "mustard", "sesame", "sulphites", "lupin"]
LUNCH_ENDS = "16:00"
ACTIVE_STATUSES = ["booked", "seated"]
MAX_PARTY = 12
LARGE_PARTY = 7
NO_SHOW_LIMIT = 2
BOOKING_LEAD_MINUTES = 120
BOOKING_WINDOW_DAYS = 60
FREE_CANCEL_MINUTES = 1440
SILVER_VISITS = 10
GOLD_VISITS = 25
TAKEOUT_DISCOUNT = 0.1
TAKEOUT_LEAD_MINUTES = 30
TAKEOUT_DAYS_AHEAD = 7
MAX_PER_DISH = 10
MAX_PORTIONS = 20
TOP_UP_MIN = 10.0
TOP_UP_MAX = 500.0
GIFT_CARD_CAP = 1000.0
EVENT_LEAD_DAYS = 14
EVENT_WINDOW_DAYS = 365
EVENT_REFUND_DAYS = 30
EVENT_DEPOSIT_RATE = 0.25
ROOM_MIN_GUESTS = 6
BUYOUT_MIN_GUESTS = 10


# ---- helpers -------------------------------------------------------------------------------

def check_date(day):
    if len(day) != 10:
        raise ToolError(f"{day} is not a date like 2026-10-16")
    clock.days_between(clock.today(), day)
    return day


def minutes_of(hhmm):
    parts = hhmm.split(":")
    if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit() or len(parts[1]) != 2:
        raise ToolError(f"{hhmm} is not a time like 19:30")
    return int(parts[0]) * 60 + int(parts[1])


def minutes_until(day, hhmm):
    return (clock.days_between(clock.today(), day) * 1440 + minutes_of(hhmm)
            - minutes_of(clock.now()[11:16]))


def weekday_of(day):
    return WEEKDAYS[clock.days_between(A_MONDAY, day) % 7]


def session_of(hhmm):
    return "lunch" if hhmm < LUNCH_ENDS else "dinner"


def sittings_of(venue):
    return venue["sittings"].split(",")


def allergies_of(guest):
    return [a for a in guest["allergies"].split(",") if a]


def no_shows_of(guest_id):
    return db.count("table_bookings", {"guest_id": guest_id, "status": "no_show"})


def tier_of(guest):
    if guest["loyalty_visits"] >= GOLD_VISITS:
        return "gold"
    if guest["loyalty_visits"] >= SILVER_VISITS:
        return "silver"
    return "member"


def check_open(venue, day):
    if weekday_of(day) == venue["closed_day"]:
        raise ToolError(f"{venue['name']} is closed on {venue['closed_day']}s")


def check_party(party_size):
    if party_size < 1:
        raise ToolError("the party size must be at least 1")
    if party_size > MAX_PARTY:
        raise ToolError(f"tables are for at most {MAX_PARTY} guests; larger groups book a private event")


def check_sitting(venue, day, hhmm):
    """Open day, one of the venue's sittings, at least 2 hours ahead and at most 60 days ahead."""
    check_date(day)
    check_open(venue, day)
    if hhmm not in sittings_of(venue):
        raise ToolError(f"{venue['name']} seats guests only at {', '.join(sittings_of(venue))}")
    if minutes_until(day, hhmm) < BOOKING_LEAD_MINUTES:
        raise ToolError("tables must be booked at least 2 hours before the sitting starts")
    if clock.days_between(clock.today(), day) > BOOKING_WINDOW_DAYS:
        raise ToolError(f"tables can be booked at most {BOOKING_WINDOW_DAYS} days ahead")


def buyout_on(venue_id, day, session):
    for event in db.find("private_events", {"venue_id": venue_id, "event_date": day, "session": session,
                                            "status": "confirmed"}):
        if event["space"] == "buyout":
            return event
    return None


def covers_left(venue, day, hhmm, skip_id=None):
    if buyout_on(venue["venue_id"], day, session_of(hhmm)):
        return 0
    taken = 0
    for r in db.find("table_bookings", {"venue_id": venue["venue_id"], "starts_at": f"{day}T{hhmm}:00"}):
        if r["status"] in ACTIVE_STATUSES and r["booking_id"] != skip_id:
            taken += r["party_size"]
    return max(0, venue["covers_per_sitting"] - taken)


def deposit_for(guest_id, venue, party_size):
    if party_size >= LARGE_PARTY or no_shows_of(guest_id) >= NO_SHOW_LIMIT:
        return round(venue["deposit_per_guest"] * party_size, 2)
    return 0.0


def check_one_per_day(guest_id, day, skip_id=None):
    for r in db.find("table_bookings", {"guest_id": guest_id, "status": "booked"}):
        if r["starts_at"][:10] == day and r["booking_id"] != skip_id:
            raise ToolError(f"the guest already holds booking {r['booking_id']} on {day}; "
                            "a guest holds one booking per day")


def owned_booking(guest_id, booking_id):
    db.get("guests", guest_id)
    booking = db.owned("table_bookings", booking_id, "guest_id", guest_id, "booking")
    return booking


def booking_view(booking):
    venue = db.get("venues", booking["venue_id"])
    view = booking.copy()
    view.update({"venue_name": venue["name"], "city": venue["city"], "currency": venue["currency"],
                 "date": booking["starts_at"][:10], "time": booking["starts_at"][11:16]})
    return view


def usable_card(card_code):
    card = db.get("gift_cards", card_code.strip().upper())
    if card["status"] != "active":
        raise ToolError(f"gift card {card['card_code']} is {card['status']} and cannot be used")
    if card["expires_on"] < clock.today():
        raise ToolError(f"gift card {card['card_code']} expired on {card['expires_on']}")
    return card


def order_view(order):
    venue = db.get("venues", order["venue_id"])
    lines = []
    subtotal = 0.0
    for line in db.find("order_lines", {"order_id": order["order_id"]}):
        item = db.get("menu_items", line["item_id"])
        amount = round(line["quantity"] * line["unit_price"], 2)
        subtotal += amount
        lines.append({"item_id": line["item_id"], "name": item["name"], "quantity": line["quantity"],
                      "unit_price": line["unit_price"], "amount": amount})
    subtotal = round(subtotal, 2)
    discount = round(subtotal * order["discount_rate"], 2)
    total = round(subtotal - discount, 2)
    view = order.copy()
    view.update({"venue_name": venue["name"], "currency": venue["currency"], "lines": lines,
                 "subtotal": subtotal, "discount": discount, "total": total,
                 "balance_due": round(total - order["gift_card_amount"], 2)})
    return view


def owned_order(guest_id, order_id):
    db.get("guests", guest_id)
    order = db.owned("takeout_orders", order_id, "guest_id", guest_id, "order")
    return order


def public_guest(guest):
    return {"guest_id": guest["guest_id"], "first_name": guest["first_name"], "last_name": guest["last_name"]}


# ---- guests --------------------------------------------------------------------------------

@tool("read")
def find_guest_by_phone(phone: str) -> dict:
    """Find a guest's id from the phone number on file (spaces and punctuation are ignored).

    Args:
        phone: The guest's phone number with country code, e.g. "+44 7700 900123".
    """
    wanted = digits_of(phone)
    if len(wanted) < 8:
        raise ToolError(f"{phone} is not a full phone number")
    for guest in db.find("guests"):
        if digits_of(guest["phone"]) == wanted:
            return public_guest(guest)
    raise ToolError(f"no guest with phone number {phone}")


@tool("read")
def find_guest_by_email(email: str) -> dict:
    """Find a guest's id from the email address on file.

    Args:
        email: The guest's email address, e.g. "maeve.byrne12@mail.com".
    """
    return public_guest(db.one("guests", {"email": email.strip().lower()}))


@tool("read")
def get_guest_profile(guest_id: str) -> dict:
    """Show a guest's profile: contact details, allergies, loyalty visits and tier, no-shows and gift cards.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
    """
    guest = db.get("guests", guest_id)
    profile = guest.copy()
    cards = [{"card_code": c["card_code"], "currency": c["currency"], "balance": c["balance"],
              "status": c["status"], "expires_on": c["expires_on"]}
             for c in db.find("gift_cards", {"guest_id": guest_id})]
    profile.update({"allergies": allergies_of(guest), "loyalty_tier": tier_of(guest),
                    "no_show_count": no_shows_of(guest_id), "gift_cards": cards})
    return profile


@tool("write")
def add_allergy(guest_id: str, allergen: Literal["gluten", "crustaceans", "molluscs", "egg", "fish", "peanuts",
                                                  "soy", "milk", "tree_nuts", "celery", "mustard", "sesame",
                                                  "sulphites", "lupin"]) -> dict:
    """Record an allergy on a guest's profile; takeout orders then refuse dishes containing it.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        allergen: One of the 14 declared allergens, e.g. "sesame".
    """
    guest = db.get("guests", guest_id)
    if allergen not in ALLERGENS:
        raise ToolError(f"{allergen} is not one of the declared allergens: {', '.join(ALLERGENS)}")
    current = allergies_of(guest)
    if allergen in current:
        raise ToolError(f"{allergen} is already on the guest's allergy list")
    updated = sorted(current + [allergen])
    db.update("guests", guest_id, {"allergies": ",".join(updated)})
    return {"guest_id": guest_id, "allergies": updated}


# ---- venues, menus and availability ---------------------------------------------------------

@tool("read")
def list_venues(city: str | None = None,
                cuisine: Literal["modern_british", "italian", "japanese", "spanish", "french", "seafood",
                                 "indian", "plant_based"] | None = None) -> list:
    """List the group's restaurants with address, sittings, closing day, takeout hours and event spaces.

    Args:
        city: Only restaurants in this city, e.g. "London".
        cuisine: Only restaurants of this cuisine, e.g. "italian".
    """
    venues = db.find("venues", order_by="name")
    if city:
        venues = [v for v in venues if v["city"].lower() == city.strip().lower()]
    if cuisine:
        venues = [v for v in venues if v["cuisine"] == cuisine]
    return venues


@tool("read")
def get_menu(venue_id: str, course: Literal["starter", "main", "dessert", "side", "drink"] | None = None,
             exclude_allergens: list[str] | None = None, takeout_only: bool = False) -> list:
    """List the dishes a restaurant serves today, optionally one course, free of given allergens, or takeout only.

    Dishes that are off the menu today are not listed.

    Args:
        venue_id: The restaurant's id, e.g. "VEN-000002".
        course: Only this course, e.g. "main".
        exclude_allergens: Leave out dishes containing any of these allergens, e.g. ["milk"].
        takeout_only: Only dishes that can be ordered for takeout, e.g. true.
    """
    venue = db.get("venues", venue_id)
    excluded = exclude_allergens or []
    unknown = [a for a in excluded if a not in ALLERGENS]
    if unknown:
        raise ToolError(f"unknown allergen(s) {', '.join(unknown)}; use: {', '.join(ALLERGENS)}")
    where = {"venue_id": venue_id, "available": True}
    if course:
        where["course"] = course
    if takeout_only:
        where["takeout"] = True
    dishes = []
    for item in db.find("menu_items", where):
        allergens = [a for a in item["allergens"].split(",") if a]
        if [a for a in allergens if a in excluded]:
            continue
        dishes.append({"item_id": item["item_id"], "name": item["name"], "course": item["course"],
                       "price": item["price"], "currency": venue["currency"], "allergens": allergens,
                       "vegetarian": item["vegetarian"], "takeout": item["takeout"]})
    return dishes


@tool("read")
def check_availability(venue_id: str, date: str, party_size: int) -> dict:
    """Show, for each sitting of a restaurant on one date, the covers left and whether the party can book it.

    Args:
        venue_id: The restaurant's id, e.g. "VEN-000002".
        date: The date, YYYY-MM-DD, e.g. "2026-10-16".
        party_size: Number of guests, e.g. 4.
    """
    venue = db.get("venues", venue_id)
    check_date(date)
    check_party(party_size)
    weekday = weekday_of(date)
    result = {"venue_id": venue_id, "venue_name": venue["name"], "date": date, "weekday": weekday,
              "party_size": party_size, "open": weekday != venue["closed_day"], "sittings": []}
    if not result["open"]:
        return result
    days_ahead = clock.days_between(clock.today(), date)
    for hhmm in sittings_of(venue):
        left = covers_left(venue, date, hhmm)
        in_window = minutes_until(date, hhmm) >= BOOKING_LEAD_MINUTES and days_ahead <= BOOKING_WINDOW_DAYS
        result["sittings"].append({"time": hhmm, "covers_left": left,
                                   "bookable": in_window and left >= party_size})
    result["deposit_per_guest"] = venue["deposit_per_guest"]
    return result


# ---- table bookings ---------------------------------------------------------------------------

@tool("read")
def list_bookings(guest_id: str,
                      status: Literal["booked", "seated", "completed", "cancelled", "no_show"] | None = None) -> list:
    """List a guest's table bookings, soonest first, optionally only one status.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        status: Only bookings with this status, e.g. "booked".
    """
    db.get("guests", guest_id)
    where = {"guest_id": guest_id}
    if status:
        where["status"] = status
    return [booking_view(r) for r in db.find("table_bookings", where, order_by="starts_at")]


@tool("read")
def get_booking(guest_id: str, booking_id: str) -> dict:
    """Show one of a guest's table bookings with its deposit, the free-cancellation deadline and today's cancellation charge.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        booking_id: The booking's id, e.g. "BKG-000118".
    """
    booking = owned_booking(guest_id, booking_id)
    view = booking_view(booking)
    venue = db.get("venues", booking["venue_id"])
    view["free_cancellation_until"] = f"{clock.add_days(view['date'], -1)}T{view['time']}:00"
    if booking["status"] == "booked":
        late = minutes_until(view["date"], view["time"]) < FREE_CANCEL_MINUTES
        fee = 0.0
        if late and booking["deposit"] == 0 and tier_of(db.get("guests", guest_id)) != "gold":
            fee = round(venue["late_cancel_fee"] * booking["party_size"], 2)
        view["cancelling_now"] = {"late": late, "fee": fee,
                                  "deposit": "forfeited" if late and booking["deposit"] > 0 else
                                  ("refunded" if booking["deposit"] > 0 else "none")}
    return view


@tool("write")
def book_table(guest_id: str, venue_id: str, date: str, time: str, party_size: int,
               occasion: Literal["none", "birthday", "anniversary", "business", "date_night"] | None = None) -> dict:
    """Book a table at one of a restaurant's sittings. Parties of 7 or more, and guests with 2 or more no-shows, pay a deposit per guest.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        venue_id: The restaurant's id, e.g. "VEN-000002".
        date: The date, YYYY-MM-DD, e.g. "2026-10-16".
        time: One of the restaurant's sitting times, HH:MM, e.g. "19:30".
        party_size: Number of guests, 1 to 12, e.g. 4.
        occasion: What the meal celebrates, e.g. "birthday".
    """
    db.get("guests", guest_id)
    venue = db.get("venues", venue_id)
    check_party(party_size)
    check_sitting(venue, date, time)
    check_one_per_day(guest_id, date)
    left = covers_left(venue, date, time)
    if left < party_size:
        raise ToolError(f"the {time} sitting on {date} has {left} covers left, not enough for {party_size}")
    deposit = deposit_for(guest_id, venue, party_size)
    booking = db.insert("table_bookings", {
        "guest_id": guest_id, "venue_id": venue_id, "starts_at": f"{date}T{time}:00", "party_size": party_size,
        "status": "booked", "occasion": occasion or "none", "deposit": deposit,
        "deposit_status": "held" if deposit > 0 else "none", "cancellation_fee": 0.0, "booked_via": "phone",
        "special_requests": None})
    return booking_view(booking)


@tool("write")
def change_booking(guest_id: str, booking_id: str, date: str | None = None, time: str | None = None,
                       party_size: int | None = None) -> dict:
    """Change the date, sitting time and/or party size of a booked booking; the deposit is recalculated.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        booking_id: The booking's id, e.g. "BKG-000118".
        date: The new date, YYYY-MM-DD, e.g. "2026-10-17".
        time: The new sitting time, HH:MM, e.g. "21:00".
        party_size: The new number of guests, e.g. 6.
    """
    booking = owned_booking(guest_id, booking_id)
    if booking["status"] != "booked":
        raise ToolError(f"booking {booking_id} is {booking['status']}; only booked tables can be changed")
    venue = db.get("venues", booking["venue_id"])
    new_date = date or booking["starts_at"][:10]
    new_time = time or booking["starts_at"][11:16]
    new_size = party_size if party_size is not None else booking["party_size"]
    if (new_date == booking["starts_at"][:10] and new_time == booking["starts_at"][11:16]
            and new_size == booking["party_size"]):
        raise ToolError("nothing to change: give a new date, time or party size")
    check_party(new_size)
    check_sitting(venue, new_date, new_time)
    if new_date != booking["starts_at"][:10]:
        check_one_per_day(guest_id, new_date, booking_id)
    left = covers_left(venue, new_date, new_time, booking_id)
    if left < new_size:
        raise ToolError(f"the {new_time} sitting on {new_date} has {left} covers left, not enough for {new_size}")
    deposit = deposit_for(guest_id, venue, new_size)
    old_deposit = booking["deposit"]
    if deposit > 0:
        deposit_status = "held"
    else:
        deposit_status = "refunded" if old_deposit > 0 else "none"
    updated = db.update("table_bookings", booking_id, {"starts_at": f"{new_date}T{new_time}:00",
                                                         "party_size": new_size, "deposit": deposit,
                                                         "deposit_status": deposit_status})
    view = booking_view(updated)
    view["deposit_change"] = round(deposit - old_deposit, 2)
    return view


@tool("write")
def cancel_booking(guest_id: str, booking_id: str) -> dict:
    """Cancel a booked booking. Inside 24 hours a deposit is forfeited, or else a per-guest late fee is charged (waived for gold members).

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        booking_id: The booking's id, e.g. "BKG-000118".
    """
    booking = owned_booking(guest_id, booking_id)
    if booking["status"] != "booked":
        raise ToolError(f"booking {booking_id} is {booking['status']}; only booked tables "
                        "can be cancelled")
    day = booking["starts_at"][:10]
    hhmm = booking["starts_at"][11:16]
    ahead = minutes_until(day, hhmm)
    if ahead <= 0:
        raise ToolError(f"the sitting of booking {booking_id} has already started")
    venue = db.get("venues", booking["venue_id"])
    late = ahead < FREE_CANCEL_MINUTES
    fee = 0.0
    deposit_status = booking["deposit_status"]
    if booking["deposit"] > 0:
        deposit_status = "forfeited" if late else "refunded"
    elif late and tier_of(db.get("guests", guest_id)) != "gold":
        fee = round(venue["late_cancel_fee"] * booking["party_size"], 2)
    db.update("table_bookings", booking_id, {"status": "cancelled", "deposit_status": deposit_status,
                                               "cancellation_fee": fee})
    return {"booking_id": booking_id, "status": "cancelled", "late_cancellation": late,
            "deposit": booking["deposit"], "deposit_status": deposit_status, "cancellation_fee": fee,
            "currency": venue["currency"]}


@tool("write")
def join_waitlist(guest_id: str, venue_id: str, date: str, time: str, party_size: int) -> dict:
    """Put a guest on the waitlist for a sitting that cannot take their party.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        venue_id: The restaurant's id, e.g. "VEN-000002".
        date: The date, YYYY-MM-DD, e.g. "2026-11-06".
        time: The sitting time, HH:MM, e.g. "19:30".
        party_size: Number of guests, 1 to 12, e.g. 4.
    """
    db.get("guests", guest_id)
    venue = db.get("venues", venue_id)
    check_party(party_size)
    check_sitting(venue, date, time)
    left = covers_left(venue, date, time)
    if left >= party_size:
        raise ToolError(f"the {time} sitting still has {left} covers left; book the table instead")
    starts_at = f"{date}T{time}:00"
    waiting = db.find("waitlist_entries", {"venue_id": venue_id, "starts_at": starts_at, "status": "waiting"})
    if [w for w in waiting if w["guest_id"] == guest_id]:
        raise ToolError("the guest is already on the waitlist for this sitting")
    return db.insert("waitlist_entries", {"guest_id": guest_id, "venue_id": venue_id, "starts_at": starts_at,
                                          "party_size": party_size, "status": "waiting",
                                          "position": len(waiting) + 1, "joined_at": clock.now()})


# ---- takeout -------------------------------------------------------------------------------

@tool("read")
def list_takeout_orders(guest_id: str) -> list:
    """List a guest's takeout orders, newest first, with dishes, totals, gift-card payment and balance due.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
    """
    db.get("guests", guest_id)
    return [order_view(o) for o in db.find("takeout_orders", {"guest_id": guest_id}, order_by="-pickup_at")]


@tool("write")
def place_takeout_order(guest_id: str, venue_id: str, pickup_date: str, pickup_time: str,
                        item_ids: list[str] | None = None, quantities: list[int] | None = None) -> dict:
    """Place a takeout order; silver and gold loyalty members get 10% off.

    Dishes must be on the restaurant's takeout menu today and free of the guest's recorded allergens.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        venue_id: The restaurant's id, e.g. "VEN-000002".
        pickup_date: Pickup date, YYYY-MM-DD, e.g. "2026-10-08".
        pickup_time: Pickup time, HH:MM, e.g. "19:00".
        item_ids: The dishes, each listed once (required), e.g. ["MNU-000014", "MNU-000019"].
        quantities: Portions of each dish, in the same order (required), e.g. [2, 1].
    """
    guest = db.get("guests", guest_id)
    venue = db.get("venues", venue_id)
    item_ids = item_ids or []
    quantities = quantities or []
    if not item_ids or len(item_ids) != len(quantities):
        raise ToolError("give at least one dish and one quantity per dish")
    if len(set(item_ids)) != len(item_ids):
        raise ToolError("list each dish once, with its quantity")
    check_date(pickup_date)
    check_open(venue, pickup_date)
    if clock.days_between(clock.today(), pickup_date) > TAKEOUT_DAYS_AHEAD:
        raise ToolError(f"takeout can be ordered at most {TAKEOUT_DAYS_AHEAD} days ahead")
    if minutes_of(pickup_time) < minutes_of(venue["takeout_from"]) or \
            minutes_of(pickup_time) > minutes_of(venue["takeout_until"]):
        raise ToolError(f"{venue['name']} hands out takeout from {venue['takeout_from']} to {venue['takeout_until']}")
    if minutes_until(pickup_date, pickup_time) < TAKEOUT_LEAD_MINUTES:
        raise ToolError("pickup must be at least 30 minutes from now")
    allergies = allergies_of(guest)
    lines = []
    for i, item_id in enumerate(item_ids):
        quantity = quantities[i]
        if quantity < 1 or quantity > MAX_PER_DISH:
            raise ToolError(f"quantities run from 1 to {MAX_PER_DISH} per dish")
        item = db.get("menu_items", item_id)
        if item["venue_id"] != venue_id:
            raise ToolError(f"{item['name']} ({item_id}) is not on the menu of {venue['name']}")
        if not item["available"]:
            raise ToolError(f"{item['name']} is off the menu today")
        if not item["takeout"]:
            raise ToolError(f"{item['name']} is served in the restaurant only, not for takeout")
        clash = [a for a in item["allergens"].split(",") if a and a in allergies]
        if clash:
            raise ToolError(f"{item['name']} contains {', '.join(clash)}, which is on the guest's allergy list")
        lines.append({"item_id": item_id, "quantity": quantity, "unit_price": item["price"]})
    if sum(quantities) > MAX_PORTIONS:
        raise ToolError(f"a takeout order holds at most {MAX_PORTIONS} portions")
    order = db.insert("takeout_orders", {
        "guest_id": guest_id, "venue_id": venue_id, "pickup_at": f"{pickup_date}T{pickup_time}:00",
        "placed_at": clock.now(), "status": "placed",
        "discount_rate": TAKEOUT_DISCOUNT if tier_of(guest) != "member" else 0.0,
        "gift_card_code": None, "gift_card_amount": 0.0})
    for line in lines:
        line["order_id"] = order["order_id"]
        db.insert("order_lines", line)
    return order_view(order)


@tool("write")
def cancel_takeout_order(guest_id: str, order_id: str) -> dict:
    """Cancel a placed takeout order at least 30 minutes before pickup; any gift-card payment goes back to the card.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        order_id: The order's id, e.g. "TKO-000031".
    """
    order = owned_order(guest_id, order_id)
    if order["status"] != "placed":
        raise ToolError(f"order {order_id} is {order['status']}; only placed orders can be cancelled")
    if minutes_until(order["pickup_at"][:10], order["pickup_at"][11:16]) < TAKEOUT_LEAD_MINUTES:
        raise ToolError("the kitchen is already preparing this order; it can no longer be cancelled")
    refunded = 0.0
    if order["gift_card_code"] and order["gift_card_amount"] > 0:
        card = db.get("gift_cards", order["gift_card_code"])
        refunded = order["gift_card_amount"]
        db.update("gift_cards", card["card_code"], {"balance": round(card["balance"] + refunded, 2)})
    db.update("takeout_orders", order_id, {"status": "cancelled"})
    return {"order_id": order_id, "status": "cancelled", "refunded_to_gift_card": refunded,
            "gift_card_code": order["gift_card_code"]}


# ---- gift cards ----------------------------------------------------------------------------

@tool("read")
def get_gift_card(card_code: str) -> dict:
    """Show a gift card's balance, currency, status, expiry and whether it can be used today.

    Args:
        card_code: The code printed on the card, e.g. "GFT-000007".
    """
    card = db.get("gift_cards", card_code.strip().upper())
    view = card.copy()
    view["usable"] = card["status"] == "active" and card["expires_on"] >= clock.today()
    return view


@tool("write")
def pay_order_with_gift_card(guest_id: str, order_id: str, card_code: str) -> dict:
    """Pay a placed takeout order with a gift card in the restaurant's currency, up to the card's balance.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        order_id: The order's id, e.g. "TKO-000031".
        card_code: The gift card's code, e.g. "GFT-000007".
    """
    order = owned_order(guest_id, order_id)
    if order["status"] != "placed":
        raise ToolError(f"order {order_id} is {order['status']}; only placed orders can be paid")
    if order["gift_card_code"]:
        raise ToolError(f"order {order_id} was already paid with gift card {order['gift_card_code']}")
    card = usable_card(card_code)
    view = order_view(order)
    if card["currency"] != view["currency"]:
        raise ToolError(f"gift card {card['card_code']} is in {card['currency']}; {view['venue_name']} "
                        f"takes {view['currency']}")
    if card["balance"] <= 0:
        raise ToolError(f"gift card {card['card_code']} has no balance left")
    charged = round(min(card["balance"], view["balance_due"]), 2)
    card_balance = round(card["balance"] - charged, 2)
    db.update("gift_cards", card["card_code"], {"balance": card_balance})
    db.update("takeout_orders", order_id, {"gift_card_code": card["card_code"], "gift_card_amount": charged})
    return {"order_id": order_id, "card_code": card["card_code"], "charged": charged, "card_balance": card_balance,
            "balance_due": round(view["balance_due"] - charged, 2), "currency": card["currency"]}


@tool("write")
def top_up_gift_card(card_code: str, amount: float) -> dict:
    """Add money to an active, unexpired gift card (10 to 500 at a time; at most 1,000 on the card).

    Args:
        card_code: The gift card's code, e.g. "GFT-000007".
        amount: The amount to add, in the card's currency, e.g. 50.0.
    """
    card = usable_card(card_code)
    if amount < TOP_UP_MIN or amount > TOP_UP_MAX:
        raise ToolError(f"top-ups run from {TOP_UP_MIN:.0f} to {TOP_UP_MAX:.0f}")
    balance = round(card["balance"] + amount, 2)
    if balance > GIFT_CARD_CAP:
        raise ToolError(f"a gift card may hold at most {GIFT_CARD_CAP:.0f}; it holds {card['balance']:.2f}")
    return db.update("gift_cards", card["card_code"], {"balance": balance})


# ---- private events ------------------------------------------------------------------------

@tool("read")
def list_private_events(guest_id: str) -> list:
    """List a guest's private events (private dining room or whole-restaurant buyout).

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
    """
    db.get("guests", guest_id)
    events = []
    for event in db.find("private_events", {"guest_id": guest_id}, order_by="event_date"):
        venue = db.get("venues", event["venue_id"])
        view = event.copy()
        view.update({"venue_name": venue["name"], "currency": venue["currency"]})
        events.append(view)
    return events


@tool("write")
def book_private_event(guest_id: str, venue_id: str, event_date: str, session: Literal["lunch", "dinner"],
                       space: Literal["private_room", "buyout"], guest_count: int) -> dict:
    """Book the private dining room or a whole-restaurant buyout for one lunch or dinner.

    The quoted spend is the space's minimum spend or guests times the event menu price, whichever is
    higher; a 25% deposit is taken.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        venue_id: The restaurant's id, e.g. "VEN-000002".
        event_date: The date, YYYY-MM-DD, e.g. "2026-12-11".
        session: "lunch" or "dinner", e.g. "dinner".
        space: "private_room" or "buyout" (the whole restaurant), e.g. "private_room".
        guest_count: Number of guests, e.g. 10.
    """
    db.get("guests", guest_id)
    venue = db.get("venues", venue_id)
    check_date(event_date)
    days_ahead = clock.days_between(clock.today(), event_date)
    if days_ahead < EVENT_LEAD_DAYS:
        raise ToolError(f"private events are booked at least {EVENT_LEAD_DAYS} days ahead")
    if days_ahead > EVENT_WINDOW_DAYS:
        raise ToolError(f"private events are booked at most {EVENT_WINDOW_DAYS} days ahead")
    check_open(venue, event_date)
    served = [t for t in sittings_of(venue) if session_of(t) == session]
    if not served:
        raise ToolError(f"{venue['name']} does not serve {session}")
    if space == "private_room":
        if venue["private_room_seats"] == 0:
            raise ToolError(f"{venue['name']} has no private dining room")
        if guest_count < ROOM_MIN_GUESTS or guest_count > venue["private_room_seats"]:
            raise ToolError(f"the private room takes {ROOM_MIN_GUESTS} to {venue['private_room_seats']} guests")
        minimum = venue["room_min_spend"]
    else:
        if guest_count < BUYOUT_MIN_GUESTS or guest_count > venue["covers_per_sitting"]:
            raise ToolError(f"a buyout of {venue['name']} takes {BUYOUT_MIN_GUESTS} to "
                            f"{venue['covers_per_sitting']} guests")
        for hhmm in served:
            for r in db.find("table_bookings", {"venue_id": venue_id, "starts_at": f"{event_date}T{hhmm}:00"}):
                if r["status"] in ACTIVE_STATUSES:
                    raise ToolError(f"tables are already booked for that {session}; the restaurant cannot be bought out")
        minimum = venue["buyout_min_spend"]
    clash = db.find("private_events", {"venue_id": venue_id, "event_date": event_date, "session": session,
                                        "status": "confirmed"})
    if clash:
        raise ToolError(f"{venue['name']} already hosts event {clash[0]['event_id']} that {session}")
    quoted = round(max(minimum, guest_count * venue["event_menu_per_head"]), 2)
    event = db.insert("private_events", {
        "guest_id": guest_id, "venue_id": venue_id, "event_date": event_date, "session": session, "space": space,
        "guest_count": guest_count, "per_head": venue["event_menu_per_head"], "minimum_spend": minimum,
        "quoted_spend": quoted, "deposit": round(quoted * EVENT_DEPOSIT_RATE, 2), "status": "confirmed",
        "deposit_status": "held", "booked_on": clock.today()})
    event["currency"] = venue["currency"]
    return event


@tool("write")
def cancel_private_event(guest_id: str, event_id: str) -> dict:
    """Cancel a confirmed private event: the deposit is refunded 30 or more days ahead, forfeited after that.

    Args:
        guest_id: The guest's id, e.g. "GST-000042".
        event_id: The event's id, e.g. "EVT-000009".
    """
    db.get("guests", guest_id)
    event = db.owned("private_events", event_id, "guest_id", guest_id, "event")
    if event["status"] != "confirmed":
        raise ToolError(f"event {event_id} is {event['status']}; only confirmed events can be cancelled")
    days_ahead = clock.days_between(clock.today(), event["event_date"])
    if days_ahead <= 0:
        raise ToolError(f"event {event_id} is today or past and can no longer be cancelled")
    deposit_status = "refunded" if days_ahead >= EVENT_REFUND_DAYS else "forfeited"
    db.update("private_events", event_id, {"status": "cancelled", "deposit_status": deposit_status})
    venue = db.get("venues", event["venue_id"])
    return {"event_id": event_id, "status": "cancelled", "days_ahead": days_ahead, "deposit": event["deposit"],
            "deposit_status": deposit_status, "currency": venue["currency"]}


@tool("write")
def transfer_to_human_agents(reason: Literal["large_table", "other"], summary: str | None = None) -> dict:
    """Hand the guest over to a human agent, when the policy says a request is theirs to handle.

    Args:
        reason: Why the guest is handed over, e.g. "large_table".
        summary: A short note of the request for the human agent, e.g. "table for 12 at Osteria Lume on 2026-10-20".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
