"""Tour operator tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

DEPOSIT_RATE = 0.2
FULL_PAYMENT_DAYS = 45
BOOKING_CUTOFF_DAYS = 7
INSURANCE_RATE = 0.06
INSURANCE_CUTOFF_DAYS = 14
EXCURSION_CUTOFF_DAYS = 3
UPGRADE_CUTOFF_DAYS = 7
BANK_TRANSFER_CUTOFF_DAYS = 14
CHANGE_CUTOFF_DAYS = 14
MAX_PARTY = 6
MIN_LEAD_AGE = 18
PASSPORT_MONTHS = 6
PASSPORT_MAX_YEARS = 10
CANCEL_TIERS = [[60, 0.10], [30, 0.35], [14, 0.60], [0, 1.0]]
CHANGE_FEE_TIERS = [[60, 0.0], [30, 50.0], [14, 150.0]]
CHANGE_FEE_SHARE = {"standard": 1.0, "silver": 0.5, "gold": 0.0}
ACTIVE_BOOKING = ["confirmed", "paid"]
MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


# ---------------------------------------------------------------- date helpers

def days_in_month(year, month):
    if month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
        return 29
    return MONTH_DAYS[month - 1]


def add_months(day, months):
    year = int(day[0:4])
    month = int(day[5:7]) + months
    dom = int(day[8:10])
    year = year + (month - 1) // 12
    month = (month - 1) % 12 + 1
    dom = min(dom, days_in_month(year, month))
    return f"{year:04d}-{month:02d}-{dom:02d}"


def age_on(date_of_birth, day):
    years = int(day[0:4]) - int(date_of_birth[0:4])
    if day[5:10] < date_of_birth[5:10]:
        years -= 1
    return years


def days_until(day):
    return clock.days_between(clock.today(), day)


# ---------------------------------------------------------------- identity and ownership

def verified_traveler(traveler_id):
    traveler = db.get("travelers", traveler_id)
    db.ensure("verifications", {"traveler_id": traveler_id},
              "identity not verified: call verify_traveler for this traveler first")
    return traveler


def owned_booking(traveler_id, booking_id):
    verified_traveler(traveler_id)
    booking = db.owned("bookings", booking_id, "traveler_id", traveler_id)
    return booking


def active_booking(traveler_id, booking_id):
    booking = owned_booking(traveler_id, booking_id)
    if booking["status"] not in ACTIVE_BOOKING:
        raise ToolError(f"booking {booking_id} is {booking['status']}; only confirmed or paid bookings can change")
    return booking


def normalize_postcode(text):
    return text.replace(" ", "").replace("-", "").upper()


# ---------------------------------------------------------------- money helpers

def return_date(departure):
    package = db.get("packages", departure["package_id"])
    return clock.add_days(departure["start_date"], package["nights"])


def balance_of(booking):
    return round(booking["total_price"] - booking["amount_paid"], 2)


def due_date_of(departure):
    return clock.add_days(departure["start_date"], -FULL_PAYMENT_DAYS)


def check_passport(traveler, departure):
    back = return_date(departure)
    needed = add_months(back, PASSPORT_MONTHS)
    if traveler["passport_expiry"] < needed:
        raise ToolError(f"the passport on file expires on {traveler['passport_expiry']}; it must be valid until at "
                        f"least {needed}, six months after the tour returns on {back}")


def check_payment_method(departure, payment_method):
    if payment_method == "bank_transfer" and days_until(departure["start_date"]) < BANK_TRANSFER_CUTOFF_DAYS:
        raise ToolError(f"bank transfers are accepted only up to {BANK_TRANSFER_CUTOFF_DAYS} days before departure; "
                        "pay by card")


def price_for(departure, party_size, with_insurance):
    tour_price = round(departure["price_per_person"] * party_size, 2)
    insurance = round(tour_price * INSURANCE_RATE, 2) if with_insurance else 0.0
    total = round(tour_price + insurance, 2)
    if days_until(departure["start_date"]) >= FULL_PAYMENT_DAYS:
        due_now = round(tour_price * DEPOSIT_RATE + insurance, 2)
        due_date = due_date_of(departure)
    else:
        due_now = total
        due_date = None
    return {"tour_price": tour_price, "insurance_cost": insurance, "total_price": total,
            "due_now": due_now, "balance_after_booking": round(total - due_now, 2),
            "balance_due_date": due_date, "currency": departure["currency"]}


def record_payment(booking_id, kind, amount, method):
    return db.insert("payments", {"booking_id": booking_id, "kind": kind, "amount": round(amount, 2),
                                  "paid_on": clock.today(), "method": method})


def charge_extra(booking, amount, kind, changes):
    """Add an extra to a booking: charged at once when the booking is paid in full, else added to the balance."""
    extras = round(booking["extras_total"] + amount, 2)
    total = round(booking["total_price"] + amount, 2)
    values = dict(changes)
    values.update({"extras_total": extras, "total_price": total})
    charged_now = 0.0
    if booking["status"] == "paid":
        charged_now = round(amount, 2)
        values["amount_paid"] = round(booking["amount_paid"] + amount, 2)
        record_payment(booking["booking_id"], kind, amount, "card")
    updated = db.update("bookings", booking["booking_id"], values)
    return updated, charged_now


def cancellation_terms(booking, departure):
    days = days_until(departure["start_date"])
    rate = 1.0
    for tier in CANCEL_TIERS:
        if days >= tier[0]:
            rate = tier[1]
            break
    base = round(booking["total_price"] - booking["insurance_cost"], 2)
    charge = round(base * rate, 2)
    refund = round(max(0.0, booking["amount_paid"] - booking["insurance_cost"] - charge), 2)
    return {"booking_id": booking["booking_id"], "days_before_departure": days, "charge_rate": rate,
            "cancellation_charge": charge, "insurance_cost_kept": booking["insurance_cost"],
            "amount_paid": booking["amount_paid"], "refund": refund, "currency": booking["currency"]}


def change_terms(traveler, booking, new_departure_id):
    old = db.get("departures", booking["departure_id"])
    new = db.get("departures", new_departure_id)
    if new["departure_id"] == old["departure_id"]:
        raise ToolError("the booking is already on that departure")
    if new["package_id"] != old["package_id"]:
        raise ToolError("a booking can only move to another departure of the same tour package")
    days = days_until(old["start_date"])
    if days < CHANGE_CUTOFF_DAYS:
        raise ToolError(f"the current departure starts in {days} days; changes close {CHANGE_CUTOFF_DAYS} days "
                        "before departure")
    if new["status"] != "open":
        raise ToolError(f"departure {new_departure_id} is {new['status']}; only open departures can be booked")
    if days_until(new["start_date"]) < BOOKING_CUTOFF_DAYS:
        raise ToolError(f"departure {new_departure_id} starts within {BOOKING_CUTOFF_DAYS} days; bookings are closed")
    if new["capacity"] - new["seats_booked"] < booking["party_size"]:
        raise ToolError(f"departure {new_departure_id} has {new['capacity'] - new['seats_booked']} seats left; "
                        f"the party needs {booking['party_size']}")
    check_passport(traveler, new)
    per_person = 0.0
    for tier in CHANGE_FEE_TIERS:
        if days >= tier[0]:
            per_person = tier[1]
            break
    fee = round(per_person * booking["party_size"] * CHANGE_FEE_SHARE[traveler["loyalty_tier"]], 2)
    tour_price = round(new["price_per_person"] * booking["party_size"], 2)
    extras = booking["extras_total"]
    if booking["room_type"] == "superior":
        extras = round(extras - old["upgrade_price"] * booking["party_size"]
                       + new["upgrade_price"] * booking["party_size"], 2)
    total = round(tour_price + extras + booking["insurance_cost"] - booking["discount"], 2)
    refund = round(max(0.0, booking["amount_paid"] - total), 2)
    paid = round(booking["amount_paid"] - refund, 2)
    return {"booking_id": booking["booking_id"], "from_departure_id": old["departure_id"],
            "to_departure_id": new_departure_id, "new_start_date": new["start_date"],
            "days_before_current_departure": days, "change_fee": fee, "new_tour_price": tour_price,
            "new_extras_total": extras, "new_total_price": total, "refund": refund,
            "new_balance": round(total - paid, 2), "currency": booking["currency"],
            "amount_paid_after": paid}


def booking_summary(booking):
    departure = db.get("departures", booking["departure_id"])
    package = db.get("packages", departure["package_id"])
    return {"booking_id": booking["booking_id"], "package_id": package["package_id"], "package": package["title"],
            "departure_id": departure["departure_id"], "start_date": departure["start_date"],
            "return_date": clock.add_days(departure["start_date"], package["nights"]),
            "party_size": booking["party_size"], "status": booking["status"],
            "total_price": booking["total_price"], "amount_paid": booking["amount_paid"],
            "balance_due": balance_of(booking), "currency": booking["currency"]}


def set_seats(departure, seats):
    status = departure["status"]
    if status in ["open", "full"]:
        status = "full" if seats >= departure["capacity"] else "open"
    return db.update("departures", departure["departure_id"], {"seats_booked": seats, "status": status})


def public_traveler(traveler):
    return {"traveler_id": traveler["traveler_id"], "first_name": traveler["first_name"],
            "last_name": traveler["last_name"]}


# ---------------------------------------------------------------- reads

@tool("read")
def find_traveler_by_email(email: str) -> dict:
    """Find a traveler's id from the email address on file.

    Args:
        email: The traveler's email address, e.g. "marta.rossi21@mail.com".
    """
    return public_traveler(db.one("travelers", {"email": email.strip().lower()}))


@tool("read")
def find_traveler_by_name(first_name: str, last_name: str, date_of_birth: str) -> dict:
    """Find a traveler's id from their full name and date of birth.

    Args:
        first_name: Given name, e.g. "Marta".
        last_name: Family name, e.g. "Rossi".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1979-11-02".
    """
    rows = db.find("travelers", {"first_name": first_name.strip(), "last_name": last_name.strip(),
                                 "date_of_birth": date_of_birth})
    if not rows:
        raise ToolError(f"no traveler named {first_name} {last_name} born {date_of_birth}")
    if len(rows) > 1:
        raise ToolError("more than one traveler matches; ask for the email address instead")
    return public_traveler(rows[0])


@tool("write")
def verify_traveler(traveler_id: str, date_of_birth: str, postcode: str) -> dict:
    """Verify the caller is the traveler, by date of birth and the postcode of their home address.

    Required once per conversation before any traveler or booking data is shown or changed.

    Args:
        traveler_id: The traveler's id, e.g. "TRV-000042".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1979-11-02".
        postcode: Postcode of the home address on file, e.g. "SW1A 1AA".
    """
    traveler = db.get("travelers", traveler_id)
    if traveler["date_of_birth"] != date_of_birth or \
            normalize_postcode(traveler["postcode"]) != normalize_postcode(postcode):
        raise ToolError("identity could not be verified with the details given")
    done = db.find("verifications", {"traveler_id": traveler_id})
    if done:
        return {"traveler_id": traveler_id, "verified": True, "verification_id": done[0]["verification_id"]}
    check = db.insert("verifications", {"traveler_id": traveler_id, "verified_at": clock.now(),
                                        "method": "dob_and_postcode"})
    return {"traveler_id": traveler_id, "verified": True, "verification_id": check["verification_id"]}


@tool("read")
def get_traveler_profile(traveler_id: str) -> dict:
    """Show a verified traveler's profile: contact details, nationality, passport and loyalty tier.

    Args:
        traveler_id: The traveler's id, e.g. "TRV-000042".
    """
    return verified_traveler(traveler_id)


@tool("read")
def list_bookings(traveler_id: str) -> list:
    """List a verified traveler's bookings (as lead traveler) with tour, dates, status and balance.

    Args:
        traveler_id: The traveler's id, e.g. "TRV-000042".
    """
    verified_traveler(traveler_id)
    rows = [booking_summary(b) for b in db.find("bookings", {"traveler_id": traveler_id})]
    return sorted(rows, key=lambda r: r["start_date"])


@tool("read")
def get_booking(traveler_id: str, booking_id: str) -> dict:
    """Show one booking in full: prices, extras, insurance, voucher, excursions, payments and balance due date.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
    """
    booking = owned_booking(traveler_id, booking_id)
    departure = db.get("departures", booking["departure_id"])
    details = dict(booking)
    details.update(booking_summary(booking))
    details["balance_due_date"] = due_date_of(departure) if balance_of(booking) > 0 else None
    excursions = []
    for row in db.find("booking_excursions", {"booking_id": booking_id}):
        excursion = db.get("excursions", row["excursion_id"])
        excursions.append({"excursion_id": row["excursion_id"], "name": excursion["name"],
                           "quantity": row["quantity"], "amount": row["amount"]})
    details["excursions"] = excursions
    details["payments"] = db.find("payments", {"booking_id": booking_id}, order_by="paid_on")
    return details


@tool("read")
def search_packages(destination: str | None = None,
                    theme: Literal["culture", "adventure", "wildlife", "food_and_wine", "hiking", "beach"] | None = None,
                    max_price: float | None = None, max_nights: int | None = None) -> list:
    """Search the tour packages on sale by destination, theme, budget and length.

    Prices are "from" prices per person in the package's currency; each departure has its own price.

    Args:
        destination: Destination country name or ISO code, e.g. "Peru".
        theme: Kind of tour, e.g. "hiking".
        max_price: Highest "from" price per person, e.g. 2500.0.
        max_nights: Longest tour length in nights, e.g. 10.
    """
    rows = db.find("packages", {"status": "active"}, order_by="base_price")
    if destination:
        wanted = destination.strip().lower()
        rows = [p for p in rows if p["destination"].lower() == wanted or p["destination_country"].lower() == wanted]
    if theme:
        rows = [p for p in rows if p["theme"] == theme]
    if max_price is not None:
        rows = [p for p in rows if p["base_price"] <= max_price]
    if max_nights is not None:
        rows = [p for p in rows if p["nights"] <= max_nights]
    return rows


@tool("read")
def get_package(package_id: str) -> dict:
    """Show a tour package with its optional excursions and their prices per person.

    Args:
        package_id: The package id, e.g. "PKG-000004".
    """
    package = dict(db.get("packages", package_id))
    package["excursions"] = db.find("excursions", {"package_id": package_id}, order_by="name")
    return package


@tool("read")
def list_departures(package_id: str, start_from: str | None = None, start_to: str | None = None,
                    min_seats: int | None = None) -> list:
    """List a package's departures by start date, with price per person, seats left, status and guide.

    With min_seats only open departures with at least that many seats left are listed.

    Args:
        package_id: The package id, e.g. "PKG-000004".
        start_from: Earliest start date included, YYYY-MM-DD, e.g. "2026-07-01".
        start_to: Latest start date included, YYYY-MM-DD, e.g. "2026-09-30".
        min_seats: Seats the party needs, e.g. 2.
    """
    package = db.get("packages", package_id)
    rows = db.find("departures", {"package_id": package_id}, order_by="start_date")
    out = []
    for dep in rows:
        if start_from and dep["start_date"] < start_from:
            continue
        if start_to and dep["start_date"] > start_to:
            continue
        left = dep["capacity"] - dep["seats_booked"]
        if min_seats is not None and (dep["status"] != "open" or left < min_seats):
            continue
        guide = db.get("guides", dep["guide_id"])
        out.append({"departure_id": dep["departure_id"], "start_date": dep["start_date"],
                    "return_date": clock.add_days(dep["start_date"], package["nights"]), "status": dep["status"],
                    "seats_left": left, "price_per_person": dep["price_per_person"],
                    "upgrade_price": dep["upgrade_price"], "currency": dep["currency"],
                    "guide": f"{guide['first_name']} {guide['last_name']}", "guide_languages": guide["languages"]})
    return out


@tool("read")
def quote_price(departure_id: str, party_size: int, with_insurance: bool) -> dict:
    """Quote a new booking: tour price, insurance, total, what is due now and when the balance is due.

    Args:
        departure_id: The departure id, e.g. "DEP-000031".
        party_size: Number of travelers, e.g. 2.
        with_insurance: Whether travel insurance is included, e.g. true.
    """
    if party_size < 1 or party_size > MAX_PARTY:
        raise ToolError(f"a party has 1 to {MAX_PARTY} travelers")
    departure = db.get("departures", departure_id)
    quote = price_for(departure, party_size, with_insurance)
    quote["departure_id"] = departure_id
    quote["party_size"] = party_size
    quote["seats_left"] = departure["capacity"] - departure["seats_booked"]
    quote["bookable"] = (departure["status"] == "open" and quote["seats_left"] >= party_size
                         and days_until(departure["start_date"]) >= BOOKING_CUTOFF_DAYS)
    return quote


@tool("read")
def quote_cancellation(traveler_id: str, booking_id: str) -> dict:
    """Quote what cancelling a booking today would cost and refund, without cancelling it.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
    """
    booking = active_booking(traveler_id, booking_id)
    departure = db.get("departures", booking["departure_id"])
    if departure["start_date"] <= clock.today():
        raise ToolError("the tour has already started; it can no longer be cancelled")
    return cancellation_terms(booking, departure)


@tool("read")
def quote_departure_change(traveler_id: str, booking_id: str, new_departure_id: str) -> dict:
    """Quote moving a booking to another departure of the same package: fee, new price, refund or balance.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
        new_departure_id: The departure to move to, e.g. "DEP-000032".
    """
    booking = active_booking(traveler_id, booking_id)
    traveler = db.get("travelers", traveler_id)
    return change_terms(traveler, booking, new_departure_id)


@tool("read")
def check_voucher(code: str) -> dict:
    """Look up a voucher code: its discount, currency, minimum spend, expiry and whether it can still be used.

    Args:
        code: The voucher code, e.g. "SPRING42".
    """
    voucher = dict(db.one("vouchers", {"code": code.strip().upper()}))
    voucher["usable"] = voucher["status"] == "active" and voucher["expires_on"] >= clock.today()
    return voucher


# ---------------------------------------------------------------- writes

@tool("write")
def book_departure(traveler_id: str, departure_id: str, party_size: int, with_insurance: bool,
                   payment_method: Literal["card", "bank_transfer"], youngest_age: int | None = None) -> dict:
    """Book seats on an open departure for a verified lead traveler and take the first payment.

    At least 45 days before the start a 20% deposit of the tour price (plus any insurance premium) is
    charged; closer to the start the full price is charged.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        departure_id: The departure id, e.g. "DEP-000031".
        party_size: Number of travelers including the lead, e.g. 2.
        with_insurance: Whether to include travel insurance, e.g. false.
        payment_method: How the first payment is made, e.g. "card".
        youngest_age: Age on the start date of the youngest person in the party, when a companion is younger than the lead, e.g. 12.
    """
    traveler = verified_traveler(traveler_id)
    departure = db.get("departures", departure_id)
    package = db.get("packages", departure["package_id"])
    if party_size < 1 or party_size > MAX_PARTY:
        raise ToolError(f"a party has 1 to {MAX_PARTY} travelers")
    if departure["status"] != "open":
        raise ToolError(f"departure {departure_id} is {departure['status']}; only open departures can be booked")
    if days_until(departure["start_date"]) < BOOKING_CUTOFF_DAYS:
        raise ToolError(f"bookings close {BOOKING_CUTOFF_DAYS} days before departure")
    left = departure["capacity"] - departure["seats_booked"]
    if left < party_size:
        raise ToolError(f"departure {departure_id} has {left} seats left; the party needs {party_size}")
    lead_age = age_on(traveler["date_of_birth"], departure["start_date"])
    if lead_age < MIN_LEAD_AGE:
        raise ToolError(f"the lead traveler must be at least {MIN_LEAD_AGE} on the start date")
    youngest = lead_age if youngest_age is None else min(youngest_age, lead_age)
    if youngest < package["min_age"]:
        raise ToolError(f"{package['title']} requires every traveler to be at least {package['min_age']} "
                        f"on the start date; the youngest would be {youngest}")
    check_passport(traveler, departure)
    for other in db.find("bookings", {"traveler_id": traveler_id, "departure_id": departure_id}):
        if other["status"] in ACTIVE_BOOKING:
            raise ToolError(f"traveler {traveler_id} already has booking {other['booking_id']} on this departure")
    check_payment_method(departure, payment_method)
    quote = price_for(departure, party_size, with_insurance)
    status = "paid" if quote["balance_after_booking"] == 0 else "confirmed"
    booking = db.insert("bookings", {"traveler_id": traveler_id, "departure_id": departure_id,
                                     "party_size": party_size, "room_type": "standard",
                                     "currency": departure["currency"], "tour_price": quote["tour_price"],
                                     "extras_total": 0.0, "insurance": bool(with_insurance),
                                     "insurance_cost": quote["insurance_cost"], "discount": 0.0,
                                     "voucher_code": None, "total_price": quote["total_price"],
                                     "amount_paid": quote["due_now"], "fees_paid": 0.0, "status": status,
                                     "booked_on": clock.today()})
    record_payment(booking["booking_id"], "full" if status == "paid" else "deposit", quote["due_now"],
                   payment_method)
    set_seats(departure, departure["seats_booked"] + party_size)
    return {"booking_id": booking["booking_id"], "status": status, "package": package["title"],
            "start_date": departure["start_date"], "party_size": party_size,
            "total_price": quote["total_price"], "amount_charged": quote["due_now"],
            "balance_due": quote["balance_after_booking"], "balance_due_date": quote["balance_due_date"],
            "currency": departure["currency"]}


@tool("write")
def add_insurance(traveler_id: str, booking_id: str) -> dict:
    """Add travel insurance to a booking; the premium (6% of the tour price) is charged at once by card.

    Only possible up to 14 days before departure.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
    """
    booking = active_booking(traveler_id, booking_id)
    if booking["insurance"]:
        raise ToolError(f"booking {booking_id} is already insured")
    departure = db.get("departures", booking["departure_id"])
    if days_until(departure["start_date"]) < INSURANCE_CUTOFF_DAYS:
        raise ToolError(f"insurance can be added only up to {INSURANCE_CUTOFF_DAYS} days before departure")
    premium = round(booking["tour_price"] * INSURANCE_RATE, 2)
    record_payment(booking_id, "insurance", premium, "card")
    updated = db.update("bookings", booking_id, {"insurance": True, "insurance_cost": premium,
                                                  "total_price": round(booking["total_price"] + premium, 2),
                                                  "amount_paid": round(booking["amount_paid"] + premium, 2)})
    return {"booking_id": booking_id, "insurance": True, "premium_charged": premium,
            "total_price": updated["total_price"], "balance_due": balance_of(updated),
            "currency": booking["currency"]}


@tool("write")
def add_excursion(traveler_id: str, booking_id: str, excursion_id: str, quantity: int) -> dict:
    """Add an optional excursion of the booked package for some or all of the party.

    Charged at once if the booking is paid in full, otherwise added to the balance. Closes 3 days before departure.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
        excursion_id: The excursion id from get_package, e.g. "EXC-000012".
        quantity: How many travelers join the excursion, e.g. 2.
    """
    booking = active_booking(traveler_id, booking_id)
    departure = db.get("departures", booking["departure_id"])
    excursion = db.get("excursions", excursion_id)
    if excursion["package_id"] != departure["package_id"]:
        raise ToolError(f"excursion {excursion_id} is not offered on this tour package")
    if days_until(departure["start_date"]) < EXCURSION_CUTOFF_DAYS:
        raise ToolError(f"excursions can be added only up to {EXCURSION_CUTOFF_DAYS} days before departure")
    if quantity < 1 or quantity > booking["party_size"]:
        raise ToolError(f"quantity must be between 1 and the party size of {booking['party_size']}")
    if db.find("booking_excursions", {"booking_id": booking_id, "excursion_id": excursion_id}):
        raise ToolError(f"excursion {excursion_id} is already on booking {booking_id}")
    amount = round(excursion["price"] * quantity, 2)
    line = db.insert("booking_excursions", {"booking_id": booking_id, "excursion_id": excursion_id,
                                            "quantity": quantity, "amount": amount, "added_on": clock.today()})
    updated, charged = charge_extra(booking, amount, "extra", {})
    return {"booking_id": booking_id, "line_id": line["line_id"], "excursion": excursion["name"],
            "quantity": quantity, "amount": amount, "charged_now": charged,
            "total_price": updated["total_price"], "balance_due": balance_of(updated),
            "currency": booking["currency"]}


@tool("write")
def upgrade_room(traveler_id: str, booking_id: str) -> dict:
    """Upgrade a booking from standard to superior rooms, at the departure's upgrade price per traveler.

    Charged at once if the booking is paid in full, otherwise added to the balance. Closes 7 days before departure.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
    """
    booking = active_booking(traveler_id, booking_id)
    if booking["room_type"] != "standard":
        raise ToolError(f"booking {booking_id} already has {booking['room_type']} rooms")
    departure = db.get("departures", booking["departure_id"])
    if days_until(departure["start_date"]) < UPGRADE_CUTOFF_DAYS:
        raise ToolError(f"room upgrades close {UPGRADE_CUTOFF_DAYS} days before departure")
    supplement = round(departure["upgrade_price"] * booking["party_size"], 2)
    updated, charged = charge_extra(booking, supplement, "extra", {"room_type": "superior"})
    return {"booking_id": booking_id, "room_type": "superior", "supplement": supplement, "charged_now": charged,
            "total_price": updated["total_price"], "balance_due": balance_of(updated),
            "currency": booking["currency"]}


@tool("write")
def change_departure(traveler_id: str, booking_id: str, new_departure_id: str) -> dict:
    """Move a booking to another open departure of the same package.

    The change fee (by days before the current departure, reduced for loyalty members) is charged at once
    by card; the tour price is repriced, and any overpayment is refunded.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
        new_departure_id: The departure to move to, e.g. "DEP-000032".
    """
    booking = active_booking(traveler_id, booking_id)
    traveler = db.get("travelers", traveler_id)
    terms = change_terms(traveler, booking, new_departure_id)
    old = db.get("departures", booking["departure_id"])
    new = db.get("departures", new_departure_id)
    if terms["change_fee"] > 0:
        record_payment(booking_id, "change_fee", terms["change_fee"], "card")
    if terms["refund"] > 0:
        record_payment(booking_id, "refund", terms["refund"], "card")
    paid = terms["amount_paid_after"]
    status = "paid" if paid >= terms["new_total_price"] else "confirmed"
    set_seats(old, old["seats_booked"] - booking["party_size"])
    set_seats(new, new["seats_booked"] + booking["party_size"])
    updated = db.update("bookings", booking_id, {
        "departure_id": new_departure_id, "tour_price": terms["new_tour_price"],
        "extras_total": terms["new_extras_total"], "total_price": terms["new_total_price"], "amount_paid": paid,
        "fees_paid": round(booking["fees_paid"] + terms["change_fee"], 2), "status": status})
    result = booking_summary(updated)
    result.update({"change_fee": terms["change_fee"], "refund": terms["refund"],
                   "balance_due_date": due_date_of(new) if balance_of(updated) > 0 else None})
    return result


@tool("write")
def cancel_booking(traveler_id: str, booking_id: str) -> dict:
    """Cancel a booking before departure; the refund follows the cancellation tiers and the seats are released.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
    """
    booking = active_booking(traveler_id, booking_id)
    departure = db.get("departures", booking["departure_id"])
    if departure["start_date"] <= clock.today():
        raise ToolError("the tour has already started; it can no longer be cancelled")
    terms = cancellation_terms(booking, departure)
    if terms["refund"] > 0:
        record_payment(booking_id, "refund", terms["refund"], "card")
    db.update("bookings", booking_id, {"status": "cancelled",
                                       "amount_paid": round(booking["amount_paid"] - terms["refund"], 2)})
    set_seats(departure, departure["seats_booked"] - booking["party_size"])
    terms["status"] = "cancelled"
    return terms


@tool("write")
def pay_balance(traveler_id: str, booking_id: str, payment_method: Literal["card", "bank_transfer"]) -> dict:
    """Pay the whole outstanding balance of a confirmed booking before departure.

    Bank transfers are accepted only up to 14 days before departure.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
        payment_method: How the balance is paid, e.g. "card".
    """
    booking = active_booking(traveler_id, booking_id)
    balance = balance_of(booking)
    if booking["status"] != "confirmed" or balance <= 0:
        raise ToolError(f"booking {booking_id} has no balance to pay")
    departure = db.get("departures", booking["departure_id"])
    if departure["start_date"] <= clock.today():
        raise ToolError("the tour has already started; contact the accounts team")
    check_payment_method(departure, payment_method)
    payment = record_payment(booking_id, "balance", balance, payment_method)
    db.update("bookings", booking_id, {"amount_paid": booking["total_price"], "status": "paid"})
    return {"booking_id": booking_id, "payment_id": payment["payment_id"], "amount_paid_now": balance,
            "status": "paid", "total_paid": booking["total_price"], "currency": booking["currency"]}


@tool("write")
def apply_voucher(traveler_id: str, booking_id: str, code: str) -> dict:
    """Redeem a voucher on a booking that still has a balance to pay; the discount lowers the balance.

    Args:
        traveler_id: The lead traveler's id, e.g. "TRV-000042".
        booking_id: The booking reference, e.g. "BKG-000117".
        code: The voucher code, e.g. "SPRING42".
    """
    booking = active_booking(traveler_id, booking_id)
    if booking["voucher_code"]:
        raise ToolError(f"booking {booking_id} already used voucher {booking['voucher_code']}; one per booking")
    balance = balance_of(booking)
    if booking["status"] != "confirmed" or balance <= 0:
        raise ToolError("vouchers apply only to bookings with a balance still to pay")
    voucher = db.one("vouchers", {"code": code.strip().upper()})
    if voucher["status"] != "active":
        raise ToolError(f"voucher {voucher['code']} has already been used")
    if voucher["expires_on"] < clock.today():
        raise ToolError(f"voucher {voucher['code']} expired on {voucher['expires_on']}")
    if booking["tour_price"] < voucher["min_spend"]:
        raise ToolError(f"voucher {voucher['code']} needs a tour price of at least {voucher['min_spend']:.2f}")
    if voucher["discount_type"] == "amount":
        if voucher["currency"] != booking["currency"]:
            raise ToolError(f"voucher {voucher['code']} is in {voucher['currency']}; the booking is in "
                            f"{booking['currency']}")
        discount = voucher["value"]
    else:
        discount = round(booking["tour_price"] * voucher["value"] / 100, 2)
    discount = round(min(discount, balance), 2)
    updated = db.update("bookings", booking_id, {"voucher_code": voucher["code"], "discount": discount,
                                                  "total_price": round(booking["total_price"] - discount, 2)})
    db.update("vouchers", voucher["voucher_id"], {"status": "redeemed", "redeemed_by_booking": booking_id})
    if balance_of(updated) <= 0:
        updated = db.update("bookings", booking_id, {"status": "paid"})
    return {"booking_id": booking_id, "voucher": voucher["code"], "discount": discount,
            "total_price": updated["total_price"], "balance_due": balance_of(updated),
            "status": updated["status"], "currency": booking["currency"]}


@tool("write")
def update_passport(traveler_id: str, passport_number: str, passport_expiry: str) -> dict:
    """Record a traveler's new passport: its number and expiry date.

    Args:
        traveler_id: The traveler's id, e.g. "TRV-000042".
        passport_number: The new passport number, 6 to 9 letters and digits, e.g. "YA4821937".
        passport_expiry: The new passport's expiry date, YYYY-MM-DD, e.g. "2036-03-14".
    """
    traveler = verified_traveler(traveler_id)
    number = passport_number.replace(" ", "").upper()
    if len(number) < 6 or len(number) > 9 or not all(c.isdigit() or c.isalpha() for c in number):
        raise ToolError(f"{passport_number} is not a valid passport number (6 to 9 letters and digits)")
    if number == traveler["passport_number"]:
        raise ToolError("that passport is already on file")
    if len(passport_expiry) != 10 or passport_expiry[4] != "-" or passport_expiry[7] != "-":
        raise ToolError("the expiry date must be written as YYYY-MM-DD")
    if passport_expiry <= clock.today():
        raise ToolError("the new passport has already expired")
    if passport_expiry > add_months(clock.today(), 12 * PASSPORT_MAX_YEARS + 1):
        raise ToolError(f"passports are valid for at most {PASSPORT_MAX_YEARS} years; check the expiry date")
    return db.update("travelers", traveler_id, {"passport_number": number, "passport_expiry": passport_expiry})


@tool("write")
def transfer_to_human_agents(reason: Literal["group_booking", "other"], summary: str | None = None) -> dict:
    """Hand the traveler over to a human agent, when the policy says a request is theirs to handle.

    Args:
        reason: Why the traveler is handed over, e.g. "group_booking".
        summary: A short note of the request for the human agent, e.g. "wants to book 5 seats on DEP-000031".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
