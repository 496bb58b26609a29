"""Cinema chain customer-service tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

TIERS = ["standard", "plus", "premiere"]
TIER_DISCOUNT = {"standard": 0.0, "plus": 0.1, "premiere": 0.2}
UPGRADE_COST = {"plus": 1500, "premiere": 4000}
EXCHANGE_FEE = {"standard": 1.5, "plus": 0.0, "premiere": 0.0}
MIN_AGE = {"all": 0, "6+": 6, "12+": 12, "16+": 16, "18+": 18}
MAX_SEATS = 10
POINTS_PER_EURO = 100
EARNED_PER_EURO = 10
CANCEL_CUTOFF_MINUTES = 120
CONCESSION_CUTOFF_MINUTES = 30


def minute_of_day(moment):
    parts = moment[11:16].split(":")
    return int(parts[0]) * 60 + int(parts[1])


def minutes_until(moment):
    now = clock.now()
    return clock.days_between(now, moment) * 1440 + minute_of_day(moment) - minute_of_day(now)


def age_on(birth_date, day):
    years = int(day[:4]) - int(birth_date[:4])
    if day[5:10] < birth_date[5:10]:
        years -= 1
    return years


def normal_postcode(text):
    return text.replace(" ", "").replace("-", "").upper()


def verified_member(member_id):
    member = db.get("members", member_id)
    db.ensure("identity_checks", {"member_id": member_id},
              "identity not verified: call verify_member for this member first")
    return member


def active_member(member_id):
    member = verified_member(member_id)
    if member["status"] != "active":
        raise ToolError(f"membership {member_id} is {member['status']}; no bookings or changes are allowed")
    return member


def owned_booking(member_id, booking_id):
    booking = db.owned("bookings", booking_id, "member_id", member_id)
    return booking


def public_member(member):
    return {"member_id": member["member_id"], "first_name": member["first_name"],
            "last_name": member["last_name"]}


def seats_left(showtime):
    screen = db.get("screens", showtime["screen_id"])
    return max(screen["seats"] - showtime["seats_sold"], 0)


def showtime_view(showtime):
    screen = db.get("screens", showtime["screen_id"])
    cinema = db.get("cinemas", screen["cinema_id"])
    movie = db.get("movies", showtime["movie_id"])
    return {"showtime_id": showtime["showtime_id"], "movie_id": movie["movie_id"], "movie_title": movie["title"],
            "cinema_id": cinema["cinema_id"], "cinema_name": cinema["name"], "city": cinema["city"],
            "screen_name": screen["name"], "format": screen["format"], "starts_at": showtime["starts_at"],
            "base_price": showtime["base_price"], "status": showtime["status"]}


def bookable_showtime(showtime_id):
    showtime = db.get("showtimes", showtime_id)
    if showtime["status"] != "scheduled":
        raise ToolError(f"showtime {showtime_id} is {showtime['status']} and cannot be booked")
    if minutes_until(showtime["starts_at"]) <= 0:
        raise ToolError(f"showtime {showtime_id} started at {showtime['starts_at']}; sales are closed")
    return showtime


def check_capacity(showtime, seats):
    left = seats_left(showtime)
    if seats > left:
        raise ToolError(f"only {left} seats are left for showtime {showtime['showtime_id']}")


def price_breakdown(member, showtime, seats, points_to_use):
    if seats < 1 or seats > MAX_SEATS:
        raise ToolError(f"a booking holds 1 to {MAX_SEATS} seats")
    if points_to_use < 0 or points_to_use % POINTS_PER_EURO != 0:
        raise ToolError(f"points are redeemed in blocks of {POINTS_PER_EURO}")
    if points_to_use > member["points"]:
        raise ToolError(f"member {member['member_id']} has only {member['points']} points")
    discount = TIER_DISCOUNT[member["tier"]]
    price = round(showtime["base_price"] * (1 - discount), 2)
    subtotal = round(price * seats, 2)
    value = round(points_to_use / POINTS_PER_EURO, 2)
    if value > subtotal:
        raise ToolError(f"points may cover at most the ticket subtotal of {subtotal:.2f} "
                        f"({int(subtotal) * POINTS_PER_EURO} points)")
    total = round(subtotal - value, 2)
    return {"showtime_id": showtime["showtime_id"], "seats": seats, "tier": member["tier"],
            "base_price": showtime["base_price"], "discount_rate": discount, "ticket_price": price,
            "subtotal": subtotal, "points_used": points_to_use, "points_value": value, "total_due": total,
            "points_to_earn": int(total) * EARNED_PER_EURO}


def booking_summary(booking):
    showtime = db.get("showtimes", booking["showtime_id"])
    view = showtime_view(showtime)
    return {"booking_id": booking["booking_id"], "movie_id": view["movie_id"], "movie_title": view["movie_title"],
            "cinema_name": view["cinema_name"], "city": view["city"], "starts_at": view["starts_at"],
            "seats": booking["seats"], "status": booking["status"], "total_paid": booking["total_paid"]}


@tool("read")
def find_member_by_email(email: str) -> dict:
    """Find a loyalty member's id from the email address on file.

    Args:
        email: The member's email address, e.g. "lena.fischer21@mail.com".
    """
    return public_member(db.one("members", {"email": email.strip().lower()}))


@tool("read")
def find_member_by_phone(phone: str) -> dict:
    """Find a loyalty member's id from the phone number on file, with country code.

    Args:
        phone: The phone number, e.g. "+49 151 234 5678".
    """
    wanted = digits_of(phone)
    if len(wanted) < 8:
        raise ToolError(f"{phone} is not a complete phone number")
    rows = [m for m in db.find("members") if digits_of(m["phone"]) == wanted]
    if not rows:
        raise ToolError(f"no member with phone number {phone}")
    if len(rows) > 1:
        raise ToolError("more than one member has this phone number; ask for the email address instead")
    return public_member(rows[0])


@tool("write")
def verify_member(member_id: str, date_of_birth: str, postcode: str) -> dict:
    """Verify the caller is the member, by date of birth and the postcode on file.

    Required once per conversation before any member data is shown or changed.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1988-11-02".
        postcode: The postcode of the member's address, e.g. "10115".
    """
    member = db.get("members", member_id)
    if member["date_of_birth"] != date_of_birth or normal_postcode(member["postcode"]) != normal_postcode(postcode):
        raise ToolError("identity could not be verified with the details given")
    done = db.find("identity_checks", {"member_id": member_id})
    if done:
        return {"member_id": member_id, "verified": True, "check_id": done[0]["check_id"]}
    check = db.insert("identity_checks", {"member_id": member_id, "verified_at": clock.now(),
                                          "method": "dob_and_postcode"})
    return {"member_id": member_id, "verified": True, "check_id": check["check_id"]}


@tool("read")
def get_member_profile(member_id: str) -> dict:
    """Show a verified member's profile: contact details, tier, loyalty points and status.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
    """
    member = verified_member(member_id)
    tier = member["tier"]
    upgrade = None
    if tier != "premiere":
        nxt = TIERS[TIERS.index(tier) + 1]
        upgrade = {"next_tier": nxt, "points_cost": UPGRADE_COST[nxt]}
    profile = dict(member)
    profile["ticket_discount_rate"] = TIER_DISCOUNT[tier]
    profile["upgrade"] = upgrade
    return profile


@tool("read")
def search_movies(title: str | None = None,
                  genre: Literal["action", "animation", "comedy", "documentary", "drama", "family", "fantasy",
                                 "horror", "mystery", "romance", "sci_fi", "thriller"] | None = None,
                  language: str | None = None) -> list:
    """Search the movies now in our cinemas by part of the title, genre and/or original language.

    Args:
        title: Part of the title, any case, e.g. "lighthouse".
        genre: The genre, e.g. "drama".
        language: Original language, e.g. "French".
    """
    rows = db.find("movies", {}, order_by="title")
    if title:
        rows = [m for m in rows if title.strip().lower() in m["title"].lower()]
    if genre:
        rows = [m for m in rows if m["genre"] == genre]
    if language:
        rows = [m for m in rows if m["language"].lower() == language.strip().lower()]
    return [{"movie_id": m["movie_id"], "title": m["title"], "genre": m["genre"], "runtime_min": m["runtime_min"],
             "age_rating": m["age_rating"], "language": m["language"]} for m in rows]


@tool("read")
def get_movie_details(movie_id: str) -> dict:
    """Show a movie's details: runtime, age rating and minimum age, director, audience rating and latest reviews.

    Args:
        movie_id: The movie's id, e.g. "MOV-000003".
    """
    movie = db.get("movies", movie_id)
    details = dict(movie)
    details["min_age"] = MIN_AGE[movie["age_rating"]]
    details["latest_reviews"] = db.find("reviews", {"movie_id": movie_id}, order_by="-created_at")[:5]
    return details


@tool("read")
def list_cinemas(city: str | None = None) -> list:
    """List our cinemas, optionally in one city, with their screens, formats and seat counts.

    Args:
        city: City name, e.g. "Berlin".
    """
    cinemas = db.find("cinemas", {}, order_by="city")
    if city:
        cinemas = [c for c in cinemas if c["city"].lower() == city.strip().lower()]
        if not cinemas:
            raise ToolError(f"we have no cinema in {city}")
    out = []
    for cinema in cinemas:
        screens = db.find("screens", {"cinema_id": cinema["cinema_id"]}, order_by="name")
        item = dict(cinema)
        item["screens"] = [{"screen_id": s["screen_id"], "name": s["name"], "format": s["format"],
                            "seats": s["seats"]} for s in screens]
        item["formats"] = sorted(set([s["format"] for s in screens]))
        out.append(item)
    return out


@tool("read")
def find_showtimes(movie_id: str, city: str, date: str) -> list:
    """List the showtimes of one movie in one city on one date, in start order.

    Args:
        movie_id: The movie's id, e.g. "MOV-000003".
        city: City name, e.g. "Berlin".
        date: The day, YYYY-MM-DD, e.g. "2026-07-12".
    """
    db.get("movies", movie_id)
    cinemas = [c for c in db.find("cinemas") if c["city"].lower() == city.strip().lower()]
    if not cinemas:
        raise ToolError(f"we have no cinema in {city}")
    found = []
    for cinema in cinemas:
        for screen in db.find("screens", {"cinema_id": cinema["cinema_id"]}):
            found.extend(db.find("showtimes", {"screen_id": screen["screen_id"], "movie_id": movie_id,
                                               "show_date": date}))
    found.sort(key=lambda s: (s["starts_at"], s["showtime_id"]))
    return [showtime_view(s) for s in found]


@tool("read")
def get_showtime(showtime_id: str) -> dict:
    """Show one showtime with seat availability: seats in the screen, sold, left, and whether it is on sale.

    Args:
        showtime_id: The showtime's id, e.g. "SHW-000017".
    """
    showtime = db.get("showtimes", showtime_id)
    view = showtime_view(showtime)
    screen = db.get("screens", showtime["screen_id"])
    movie = db.get("movies", showtime["movie_id"])
    view["age_rating"] = movie["age_rating"]
    view["runtime_min"] = movie["runtime_min"]
    view["seats_total"] = screen["seats"]
    view["seats_sold"] = showtime["seats_sold"]
    view["seats_left"] = seats_left(showtime)
    view["on_sale"] = showtime["status"] == "scheduled" and minutes_until(showtime["starts_at"]) > 0
    return view


@tool("read")
def quote_price(member_id: str, showtime_id: str, seats: int, points_to_use: int = 0) -> dict:
    """Quote what a verified member would pay for seats at a showtime, with tier discount and points.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        showtime_id: The showtime's id, e.g. "SHW-000017".
        seats: Number of seats, e.g. 2.
        points_to_use: Loyalty points to redeem, in blocks of 100 (100 points = 1.00 EUR), e.g. 300.
    """
    member = verified_member(member_id)
    showtime = db.get("showtimes", showtime_id)
    quote = price_breakdown(member, showtime, seats, points_to_use)
    quote["seats_left"] = seats_left(showtime)
    return quote


@tool("read")
def list_bookings(member_id: str,
                  status: Literal["confirmed", "cancelled", "attended", "no_show"] | None = None) -> list:
    """List a verified member's bookings, newest showtime first, optionally of one status.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        status: Only bookings in this status, e.g. "confirmed".
    """
    verified_member(member_id)
    where = {"member_id": member_id}
    if status:
        where["status"] = status
    out = [booking_summary(b) for b in db.find("bookings", where)]
    out.sort(key=lambda b: (b["starts_at"], b["booking_id"]), reverse=True)
    return out


@tool("read")
def get_booking(member_id: str, booking_id: str) -> dict:
    """Show one of a verified member's bookings in full: prices, points, screen and concession orders.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        booking_id: The booking's id, e.g. "BKG-000105".
    """
    verified_member(member_id)
    booking = owned_booking(member_id, booking_id)
    view = showtime_view(db.get("showtimes", booking["showtime_id"]))
    detail = dict(booking)
    for key in ["movie_id", "movie_title", "cinema_name", "city", "screen_name", "format", "starts_at"]:
        detail[key] = view[key]
    detail["concession_orders"] = db.find("concession_orders", {"booking_id": booking_id})
    return detail


@tool("read")
def list_concessions() -> list:
    """List the snack and drink bundles that can be pre-ordered with a booking, with prices."""
    return db.find("concessions", {}, order_by="price")


@tool("read")
def list_vouchers(member_id: str) -> list:
    """List the vouchers issued to a verified member, with their points, expiry and status.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
    """
    verified_member(member_id)
    return db.find("vouchers", {"member_id": member_id}, order_by="valid_until")


@tool("write")
def book_tickets(member_id: str, showtime_id: str, seats: int, points_to_use: int = 0) -> dict:
    """Book seats at a showtime for a member, applying the tier discount and optional points.

    The member must meet the movie's minimum age on the day of the show. Earns 10 points per
    whole euro paid.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        showtime_id: The showtime's id, e.g. "SHW-000017".
        seats: Number of seats, 1 to 10, e.g. 2.
        points_to_use: Loyalty points to redeem, in blocks of 100 (100 points = 1.00 EUR), e.g. 300.
    """
    member = active_member(member_id)
    showtime = bookable_showtime(showtime_id)
    movie = db.get("movies", showtime["movie_id"])
    need = MIN_AGE[movie["age_rating"]]
    if age_on(member["date_of_birth"], showtime["show_date"]) < need:
        raise ToolError(f"{movie['title']} is rated {movie['age_rating']}; the member must be at least {need} "
                        "on the day of the show")
    quote = price_breakdown(member, showtime, seats, points_to_use)
    check_capacity(showtime, seats)
    earned = quote["points_to_earn"]
    balance = member["points"] - points_to_use + earned
    db.update("members", member_id, {"points": balance})
    db.update("showtimes", showtime_id, {"seats_sold": showtime["seats_sold"] + seats})
    booking = db.insert("bookings", {"member_id": member_id, "showtime_id": showtime_id, "seats": seats,
                                     "ticket_price": quote["ticket_price"], "points_used": points_to_use,
                                     "total_paid": quote["total_due"], "points_earned": earned, "fees_paid": 0.0,
                                     "status": "confirmed", "refunded_amount": 0.0, "booked_at": clock.now()})
    return {"booking_id": booking["booking_id"], "movie_title": movie["title"], "starts_at": showtime["starts_at"],
            "seats": seats, "ticket_price": quote["ticket_price"], "points_used": points_to_use,
            "total_paid": quote["total_due"], "points_earned": earned, "points_balance": balance}


@tool("write")
def cancel_booking(member_id: str, booking_id: str) -> dict:
    """Cancel a confirmed booking at least 2 hours before the show, refunding tickets and pre-ordered concessions.

    Redeemed points are returned and the points the booking earned are taken back. Exchange fees are not refunded.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        booking_id: The booking's id, e.g. "BKG-000105".
    """
    member = active_member(member_id)
    booking = owned_booking(member_id, booking_id)
    if booking["status"] != "confirmed":
        raise ToolError(f"booking {booking_id} is {booking['status']}; only confirmed bookings can be cancelled")
    showtime = db.get("showtimes", booking["showtime_id"])
    if minutes_until(showtime["starts_at"]) < CANCEL_CUTOFF_MINUTES:
        raise ToolError(f"the show starts at {showtime['starts_at']}; bookings can only be cancelled up to "
                        "2 hours before the start")
    concessions_refund = 0.0
    for order in db.find("concession_orders", {"booking_id": booking_id, "status": "active"}):
        concessions_refund = concessions_refund + order["total"]
        db.update("concession_orders", order["order_id"], {"status": "refunded"})
    concessions_refund = round(concessions_refund, 2)
    balance = max(member["points"] + booking["points_used"] - booking["points_earned"], 0)
    db.update("members", member_id, {"points": balance})
    db.update("showtimes", showtime["showtime_id"], {"seats_sold": max(showtime["seats_sold"] - booking["seats"], 0)})
    db.update("bookings", booking_id, {"status": "cancelled", "refunded_amount": booking["total_paid"]})
    return {"booking_id": booking_id, "status": "cancelled", "tickets_refund": booking["total_paid"],
            "concessions_refund": concessions_refund,
            "total_refund": round(booking["total_paid"] + concessions_refund, 2),
            "points_returned": booking["points_used"], "points_revoked": booking["points_earned"],
            "points_balance": balance}


@tool("write")
def exchange_booking(member_id: str, booking_id: str, new_showtime_id: str) -> dict:
    """Move a confirmed booking to another showtime of the same movie, at least 2 hours before the original show.

    The ticket price difference is charged or refunded; standard members pay a 1.50 exchange fee.
    Seats, redeemed points and concession orders stay with the booking.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        booking_id: The booking's id, e.g. "BKG-000105".
        new_showtime_id: The showtime to move to, e.g. "SHW-000021".
    """
    member = active_member(member_id)
    booking = owned_booking(member_id, booking_id)
    if booking["status"] != "confirmed":
        raise ToolError(f"booking {booking_id} is {booking['status']}; only confirmed bookings can be exchanged")
    old = db.get("showtimes", booking["showtime_id"])
    if minutes_until(old["starts_at"]) < CANCEL_CUTOFF_MINUTES:
        raise ToolError(f"the show starts at {old['starts_at']}; bookings can only be exchanged up to "
                        "2 hours before the start")
    if new_showtime_id == old["showtime_id"]:
        raise ToolError("the booking is already for this showtime")
    new = bookable_showtime(new_showtime_id)
    if new["movie_id"] != old["movie_id"]:
        raise ToolError("a booking can only be exchanged to another showtime of the same movie")
    check_capacity(new, booking["seats"])
    price = round(new["base_price"] * (1 - TIER_DISCOUNT[member["tier"]]), 2)
    subtotal = round(price * booking["seats"], 2)
    new_due = round(max(subtotal - booking["points_used"] / POINTS_PER_EURO, 0.0), 2)
    difference = round(new_due - booking["total_paid"], 2)
    fee = EXCHANGE_FEE[member["tier"]]
    db.update("showtimes", old["showtime_id"], {"seats_sold": max(old["seats_sold"] - booking["seats"], 0)})
    db.update("showtimes", new_showtime_id, {"seats_sold": new["seats_sold"] + booking["seats"]})
    db.update("bookings", booking_id, {"showtime_id": new_showtime_id, "ticket_price": price, "total_paid": new_due,
                                       "fees_paid": round(booking["fees_paid"] + fee, 2)})
    return {"booking_id": booking_id, "old_showtime_id": old["showtime_id"], "new_showtime_id": new_showtime_id,
            "starts_at": new["starts_at"], "ticket_price": price, "total_paid": new_due,
            "price_difference": difference, "exchange_fee": fee, "net_amount": round(difference + fee, 2)}


@tool("write")
def upgrade_tier(member_id: str, tier: Literal["plus", "premiere"]) -> dict:
    """Upgrade a member one tier up, paid with loyalty points (plus: 1,500 points; premiere: 4,000 points).

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        tier: The tier to move up to, e.g. "plus".
    """
    member = active_member(member_id)
    current = TIERS.index(member["tier"])
    target = TIERS.index(tier)
    if target <= current:
        raise ToolError(f"member {member_id} is already {member['tier']}; tiers only go up")
    if target != current + 1:
        raise ToolError(f"tiers go up one level at a time; from {member['tier']} the next tier is "
                        f"{TIERS[current + 1]}")
    cost = UPGRADE_COST[tier]
    if member["points"] < cost:
        raise ToolError(f"upgrading to {tier} costs {cost} points; member has {member['points']}")
    balance = member["points"] - cost
    db.update("members", member_id, {"tier": tier, "points": balance})
    return {"member_id": member_id, "old_tier": member["tier"], "new_tier": tier, "points_spent": cost,
            "points_balance": balance, "ticket_discount_rate": TIER_DISCOUNT[tier]}


@tool("write")
def add_concessions(member_id: str, booking_id: str, concession_id: str, quantity: int) -> dict:
    """Pre-order a snack bundle for a confirmed booking, up to 30 minutes before the show.

    At most one bundle per booked seat, over all of the booking's orders.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        booking_id: The booking's id, e.g. "BKG-000105".
        concession_id: The bundle's id, e.g. "CON-000001".
        quantity: How many bundles, e.g. 2.
    """
    active_member(member_id)
    booking = owned_booking(member_id, booking_id)
    if booking["status"] != "confirmed":
        raise ToolError(f"booking {booking_id} is {booking['status']}; concessions go only with confirmed bookings")
    showtime = db.get("showtimes", booking["showtime_id"])
    if minutes_until(showtime["starts_at"]) < CONCESSION_CUTOFF_MINUTES:
        raise ToolError("concessions can be pre-ordered only until 30 minutes before the show")
    item = db.get("concessions", concession_id)
    if not item["available"]:
        raise ToolError(f"{item['name']} is not available at the moment")
    if quantity < 1:
        raise ToolError("order at least one bundle")
    ordered = sum([o["quantity"] for o in db.find("concession_orders", {"booking_id": booking_id, "status": "active"})])
    if ordered + quantity > booking["seats"]:
        raise ToolError(f"at most one bundle per seat: the booking has {booking['seats']} seats and "
                        f"{ordered} bundles already")
    return db.insert("concession_orders", {"booking_id": booking_id, "concession_id": concession_id,
                                           "quantity": quantity, "unit_price": item["price"],
                                           "total": round(item["price"] * quantity, 2), "status": "active",
                                           "ordered_at": clock.now()})


@tool("write")
def redeem_voucher(member_id: str, code: str) -> dict:
    """Redeem a voucher code issued to the member; its points are added to their balance.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        code: The voucher code, e.g. "LUM-KXPT-4821".
    """
    member = active_member(member_id)
    voucher = db.one("vouchers", {"code": code.strip().upper()})
    if voucher["member_id"] != member_id:
        raise ToolError(f"voucher {code} was issued to another member")
    if voucher["status"] != "active":
        raise ToolError(f"voucher {code} is {voucher['status']}")
    if voucher["valid_until"] < clock.today():
        raise ToolError(f"voucher {code} expired on {voucher['valid_until']}")
    db.update("vouchers", voucher["voucher_id"], {"status": "redeemed", "redeemed_on": clock.today()})
    balance = member["points"] + voucher["points"]
    db.update("members", member_id, {"points": balance})
    return {"voucher_id": voucher["voucher_id"], "code": voucher["code"], "points_added": voucher["points"],
            "points_balance": balance}


@tool("write")
def rate_movie(member_id: str, movie_id: str, stars: int, comment: str | None = None) -> dict:
    """Rate a movie the member has seen (an attended booking), once per movie, from 1 to 5 stars.

    Args:
        member_id: The member's id, e.g. "MEM-000042".
        movie_id: The movie's id, e.g. "MOV-000003".
        stars: The rating, 1 to 5, e.g. 4.
        comment: An optional short review, e.g. "Gorgeous photography".
    """
    active_member(member_id)
    movie = db.get("movies", movie_id)
    if stars < 1 or stars > 5:
        raise ToolError("ratings run from 1 to 5 stars")
    seen = [b for b in db.find("bookings", {"member_id": member_id, "status": "attended"})
            if db.get("showtimes", b["showtime_id"])["movie_id"] == movie_id]
    if not seen:
        raise ToolError(f"member {member_id} has no attended booking for {movie['title']}; "
                        "only movies seen with us can be rated")
    if db.find("reviews", {"member_id": member_id, "movie_id": movie_id}):
        raise ToolError(f"member {member_id} has already rated {movie['title']}")
    review = db.insert("reviews", {"member_id": member_id, "movie_id": movie_id, "stars": stars,
                                   "comment": comment, "created_at": clock.now()})
    count = movie["rating_count"] + 1
    average = round((movie["avg_rating"] * movie["rating_count"] + stars) / count, 2)
    db.update("movies", movie_id, {"avg_rating": average, "rating_count": count})
    return {"review_id": review["review_id"], "movie_title": movie["title"], "stars": stars,
            "movie_avg_rating": average, "rating_count": count}


@tool("write")
def transfer_to_human_agents(reason: Literal["group_booking", "other"], summary: str | None = None) -> dict:
    """Hand the member over to a human agent, when the policy says a request is theirs to handle.

    Args:
        reason: Why the member is handed over, e.g. "group_booking".
        summary: A short note of the request for the human agent, e.g. "wants 10 seats for Neon Harbor on 2026-07-14".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
