"""Basketball league operations-desk tools. Restricted Python: `db`, `clock` and `ToolError` are given."""

SALARY_CAP = 165000000.0
MIN_SALARY = 1250000.0
MAX_SALARY = 55000000.0
ROSTER_MAX = 15
ROSTER_MIN = 13
MAX_CONTRACT_YEARS = 4
SEASON_START = "2025-10-22"
SEASON_END = "2026-04-12"
MAX_TICKETS_PER_ORDER = 8
MAX_COURTSIDE_PER_ORDER = 4
MAX_TICKETS_PER_FAN_GAME = 8
SERVICE_FEE_RATE = 0.10
FULL_REFUND_DAYS = 7
HALF_REFUND_DAYS = 2
ROSTER_ROLES = ["general_manager", "assistant_general_manager"]
JERSEY_ROLES = ["general_manager", "assistant_general_manager", "operations_manager"]
MEDICAL_ROLES = ["head_athletic_trainer"]
GAME_OPS_ROLES = ["operations_manager"]
PRICE_COLUMN = {"courtside": "price_courtside", "lower_bowl": "price_lower", "upper_bowl": "price_upper"}


def full_name(row):
    return row["first_name"] + " " + row["last_name"]


def club_name(club_id):
    if club_id is None:
        return None
    return db.get("clubs", club_id)["name"]


def tipoff(game):
    return game["game_date"] + "T" + game["tip_time"] + ":00"


def has_tipped_off(game):
    return tipoff(game) <= clock.now()


def open_injury(player_id):
    rows = db.find("injuries", {"player_id": player_id, "status": "open"})
    return rows[0] if rows else None


def rostered(club_id):
    return db.find("players", {"club_id": club_id, "roster_status": "rostered"}, order_by="jersey_number")


def payroll_of(club_id):
    return round(sum([p["salary"] for p in rostered(club_id)]), 2)


def retired_numbers(club):
    return [int(x) for x in club["retired_numbers"].split(",") if x.strip().isdigit()]


def acting_staff(staff_id, club_id, roles, action):
    staff = db.get("staff", staff_id)
    if staff["club_id"] != club_id:
        raise ToolError(f"staff member {staff_id} works for {staff['club_id']}, not {club_id}; "
                        f"only the club's own staff may {action}")
    if staff["role"] not in roles:
        raise ToolError(f"a {staff['role']} may not {action}; this needs: {', '.join(roles)}")
    return staff


def club_player(player_id):
    player = db.get("players", player_id)
    if player["roster_status"] != "rostered" or player["club_id"] is None:
        raise ToolError(f"player {player_id} is not on a club's roster")
    return player


def check_jersey(club, number, player_id):
    if number < 0 or number > 99:
        raise ToolError("jersey numbers run from 0 to 99")
    if number in retired_numbers(club):
        raise ToolError(f"number {number} is retired by the {club['name']}")
    for mate in rostered(club["club_id"]):
        if mate["jersey_number"] == number and mate["player_id"] != player_id:
            raise ToolError(f"number {number} is already worn by {full_name(mate)} ({mate['player_id']})")


def game_summary(game):
    return {"game_id": game["game_id"], "game_date": game["game_date"], "tip_time": game["tip_time"],
            "home_club_id": game["home_club_id"], "home_club": club_name(game["home_club_id"]),
            "away_club_id": game["away_club_id"], "away_club": club_name(game["away_club_id"]),
            "arena": db.get("arenas", game["arena_id"])["name"], "status": game["status"],
            "home_score": game["home_score"], "away_score": game["away_score"]}


def check_date(value, label):
    if len(value) != 10 or value[4] != "-" or value[7] != "-" or not (value[:4] + value[5:7] + value[8:]).isdigit():
        raise ToolError(f"{label} must be a date like 2026-03-01, got {value}")
    return value


def club_records():
    """Win-loss lines for every club from the final games, in date order."""
    records = {}
    for club in db.find("clubs"):
        records[club["club_id"]] = {"club_id": club["club_id"], "name": club["name"], "conference": club["conference"],
                                    "wins": 0, "losses": 0, "home_wins": 0, "home_losses": 0, "away_wins": 0,
                                    "away_losses": 0, "points_for": 0, "points_against": 0, "results": []}
    for game in db.find("games", {"status": "final"}, order_by="game_date"):
        home = records[game["home_club_id"]]
        away = records[game["away_club_id"]]
        home_won = game["home_score"] > game["away_score"]
        home["points_for"] = home["points_for"] + game["home_score"]
        home["points_against"] = home["points_against"] + game["away_score"]
        away["points_for"] = away["points_for"] + game["away_score"]
        away["points_against"] = away["points_against"] + game["home_score"]
        winner = home if home_won else away
        loser = away if home_won else home
        winner["wins"] = winner["wins"] + 1
        loser["losses"] = loser["losses"] + 1
        if home_won:
            home["home_wins"] = home["home_wins"] + 1
            away["away_losses"] = away["away_losses"] + 1
        else:
            away["away_wins"] = away["away_wins"] + 1
            home["home_losses"] = home["home_losses"] + 1
        home["results"].append("W" if home_won else "L")
        away["results"].append("L" if home_won else "W")
    return records


def streak_of(results):
    if not results:
        return ""
    last = results[-1]
    n = 0
    for r in reversed(results):
        if r != last:
            break
        n += 1
    return f"{last}{n}"


@tool("read")
def find_staff_by_email(email: str) -> dict:
    """Identify a club staff member calling the desk from their work email address.

    Args:
        email: The staff member's work email, e.g. "jsmith@minutemen-bball.com".
    """
    staff = db.one("staff", {"email": email.strip().lower()}, "club staff member")
    return {"staff_id": staff["staff_id"], "first_name": staff["first_name"], "last_name": staff["last_name"],
            "role": staff["role"], "club_id": staff["club_id"], "club": club_name(staff["club_id"])}


@tool("read")
def find_fan_by_email(email: str) -> dict:
    """Find a fan's ticketing account from their email address.

    Args:
        email: The fan's email address, e.g. "maria.lopez23@gmail.com".
    """
    fan = db.one("fans", {"email": email.strip().lower()}, "fan account")
    return {"fan_id": fan["fan_id"], "first_name": fan["first_name"], "last_name": fan["last_name"],
            "membership": fan["membership"], "status": fan["status"]}


@tool("read")
def find_player_by_name(first_name: str, last_name: str) -> list:
    """Find players, rostered or free agents, by first and last name (case-insensitive).

    Args:
        first_name: The player's first name, e.g. "Luka".
        last_name: The player's last name, e.g. "Vidmar".
    """
    first = first_name.strip().lower()
    last = last_name.strip().lower()
    found = [p for p in db.find("players") if p["first_name"].lower() == first and p["last_name"].lower() == last]
    if not found:
        raise ToolError(f"no player named {first_name} {last_name}")
    return [{"player_id": p["player_id"], "first_name": p["first_name"], "last_name": p["last_name"],
             "position": p["position"], "club_id": p["club_id"], "club": club_name(p["club_id"]),
             "jersey_number": p["jersey_number"], "roster_status": p["roster_status"]} for p in found]


@tool("read")
def get_player(player_id: str) -> dict:
    """Show a player's profile: club, number, contract, and any open injury.

    Args:
        player_id: The player's id, e.g. "PLR-000003".
    """
    player = db.get("players", player_id)
    today = clock.today()
    born = player["birth_date"]
    age = int(today[:4]) - int(born[:4]) - (1 if today[5:] < born[5:] else 0)
    injury = open_injury(player_id)
    return {"player_id": player_id, "first_name": player["first_name"], "last_name": player["last_name"],
            "club_id": player["club_id"], "club": club_name(player["club_id"]),
            "roster_status": player["roster_status"], "position": player["position"],
            "jersey_number": player["jersey_number"], "nationality": player["nationality"], "age": age,
            "height_cm": player["height_cm"], "salary": player["salary"],
            "contract_end_year": player["contract_end_year"],
            "open_injury": None if injury is None else {"injury_id": injury["injury_id"],
                                                         "description": injury["description"],
                                                         "designation": injury["designation"],
                                                         "expected_return": injury["expected_return"]}}


@tool("read")
def get_player_season_averages(player_id: str) -> dict:
    """A player's per-game averages for the current season (points, rebounds, assists, minutes).

    Args:
        player_id: The player's id, e.g. "PLR-000042".
    """
    player = db.get("players", player_id)
    gp = player["games_played"]
    result = {"player_id": player_id, "name": full_name(player), "club_id": player["club_id"], "games_played": gp,
              "points_per_game": 0.0, "rebounds_per_game": 0.0, "assists_per_game": 0.0, "minutes_per_game": 0.0}
    if gp > 0:
        result["points_per_game"] = round(player["points"] / gp, 1)
        result["rebounds_per_game"] = round(player["rebounds"] / gp, 1)
        result["assists_per_game"] = round(player["assists"] / gp, 1)
        result["minutes_per_game"] = round(player["minutes"] / gp, 1)
    return result


@tool("read")
def list_clubs(conference: Literal["east", "west"] | None = None) -> list:
    """List the league's clubs with their ids, city, conference and home arena.

    Args:
        conference: Only clubs of this conference, e.g. "east".
    """
    clubs = db.find("clubs", {"conference": conference} if conference else {}, order_by="name")
    return [{"club_id": c["club_id"], "name": c["name"], "city": c["city"], "conference": c["conference"],
             "arena": db.get("arenas", c["arena_id"])["name"]} for c in clubs]


@tool("read")
def get_club(club_id: str) -> dict:
    """Show a club's details: arena, coach, record, roster size, payroll and salary-cap space.

    Args:
        club_id: The club's id, e.g. "BOS".
    """
    club = db.get("clubs", club_id)
    arena = db.get("arenas", club["arena_id"])
    players = rostered(club_id)
    payroll = payroll_of(club_id)
    record = club_records()[club_id]
    return {"club_id": club_id, "name": club["name"], "city": club["city"], "conference": club["conference"],
            "arena": arena["name"], "arena_capacity": arena["capacity"], "head_coach": club["head_coach"],
            "wins": record["wins"], "losses": record["losses"], "roster_size": len(players),
            "payroll": payroll, "salary_cap": SALARY_CAP, "cap_space": round(SALARY_CAP - payroll, 2),
            "retired_numbers": retired_numbers(club)}


@tool("read")
def list_roster(club_id: str) -> list:
    """List a club's rostered players by jersey number, with position, contract and availability.

    Args:
        club_id: The club's id, e.g. "DEN".
    """
    db.get("clubs", club_id)
    roster = []
    for p in rostered(club_id):
        injury = open_injury(p["player_id"])
        roster.append({"player_id": p["player_id"], "first_name": p["first_name"], "last_name": p["last_name"],
                       "jersey_number": p["jersey_number"], "position": p["position"], "salary": p["salary"],
                       "contract_end_year": p["contract_end_year"],
                       "availability": "available" if injury is None else injury["designation"]})
    return roster


@tool("read")
def get_injury_report(club_id: str) -> list:
    """List the open injuries of a club's rostered players, oldest first.

    Args:
        club_id: The club's id, e.g. "SEA".
    """
    db.get("clubs", club_id)
    report = []
    for p in rostered(club_id):
        injury = open_injury(p["player_id"])
        if injury is not None:
            report.append({"injury_id": injury["injury_id"], "player_id": p["player_id"], "player": full_name(p),
                           "jersey_number": p["jersey_number"], "description": injury["description"],
                           "designation": injury["designation"], "reported_on": injury["reported_on"],
                           "expected_return": injury["expected_return"]})
    return sorted(report, key=lambda r: (r["reported_on"], r["injury_id"]))


@tool("read")
def get_standings(conference: Literal["east", "west"] | None = None) -> list:
    """Standings computed from final games: rank within conference, record, games behind, streak.

    Ranked by winning percentage, then wins, then point differential.

    Args:
        conference: Only this conference, e.g. "west".
    """
    records = club_records()
    table = []
    for conf in ["east", "west"]:
        if conference and conf != conference:
            continue
        rows = [r for r in records.values() if r["conference"] == conf]
        for r in rows:
            played = r["wins"] + r["losses"]
            r["pct"] = round(r["wins"] / played, 3) if played else 0.0
            r["diff"] = r["points_for"] - r["points_against"]
        rows = sorted(rows, key=lambda r: (-r["pct"], -r["wins"], -r["diff"], r["club_id"]))
        leader = rows[0]
        for rank, r in enumerate(rows):
            played = r["wins"] + r["losses"]
            table.append({"conference": conf, "rank": rank + 1, "club_id": r["club_id"], "name": r["name"],
                          "wins": r["wins"], "losses": r["losses"], "win_pct": r["pct"],
                          "games_behind": ((leader["wins"] - r["wins"]) + (r["losses"] - leader["losses"])) / 2,
                          "home": f"{r['home_wins']}-{r['home_losses']}", "away": f"{r['away_wins']}-{r['away_losses']}",
                          "point_diff_per_game": round(r["diff"] / played, 1) if played else 0.0,
                          "streak": streak_of(r["results"])})
    return table


@tool("read")
def get_head_to_head(club_id: str, opponent_club_id: str) -> dict:
    """This season's meetings between two clubs: results so far, the series tally, and games still to play.

    Args:
        club_id: The first club's id, e.g. "LAM".
        opponent_club_id: The other club's id, e.g. "LAW".
    """
    club = db.get("clubs", club_id)
    opponent = db.get("clubs", opponent_club_id)
    if club_id == opponent_club_id:
        raise ToolError("give two different clubs")
    games = db.find("games", {"home_club_id": club_id, "away_club_id": opponent_club_id}) + \
        db.find("games", {"home_club_id": opponent_club_id, "away_club_id": club_id})
    games = sorted(games, key=lambda g: (g["game_date"], g["game_id"]))
    wins = 0
    losses = 0
    played = []
    upcoming = []
    for g in games:
        if g["status"] == "final":
            own = g["home_score"] if g["home_club_id"] == club_id else g["away_score"]
            other = g["away_score"] if g["home_club_id"] == club_id else g["home_score"]
            if own > other:
                wins += 1
            else:
                losses += 1
            played.append(game_summary(g))
        else:
            upcoming.append(game_summary(g))
    return {"club_id": club_id, "club": club["name"], "opponent_club_id": opponent_club_id,
            "opponent": opponent["name"], "club_wins": wins, "opponent_wins": losses,
            "results": played, "remaining": upcoming}


@tool("read")
def list_games(start_date: str | None = None, end_date: str | None = None, club_id: str | None = None,
               status: Literal["scheduled", "final", "postponed"] | None = None) -> list:
    """List games in date order, optionally within dates, for one club (home or away) or by status.

    Args:
        start_date: Earliest game date included, YYYY-MM-DD, e.g. "2026-02-14".
        end_date: Latest game date included, YYYY-MM-DD, e.g. "2026-02-28".
        club_id: Only games of this club, home or away, e.g. "TOR".
        status: Only games with this status, e.g. "scheduled".
    """
    start = check_date(start_date, "start_date") if start_date else SEASON_START
    end = check_date(end_date, "end_date") if end_date else SEASON_END
    if end < start:
        raise ToolError("end_date is before start_date")
    if club_id:
        db.get("clubs", club_id)
        games = db.find("games", {"home_club_id": club_id}) + db.find("games", {"away_club_id": club_id})
    else:
        games = db.find("games")
    games = [g for g in games if start <= g["game_date"] <= end and (not status or g["status"] == status)]
    games = sorted(games, key=lambda g: (g["game_date"], g["tip_time"], g["game_id"]))
    return [game_summary(g) for g in games]


@tool("read")
def get_game(game_id: str) -> dict:
    """Show one game: teams, arena, tip-off, status and score, seats left and ticket prices by section.

    Args:
        game_id: The game's id, e.g. "GAM-000087".
    """
    game = db.get("games", game_id)
    arena = db.get("arenas", game["arena_id"])
    result = game_summary(game)
    result.update({"tipoff": tipoff(game), "postponed_reason": game["postponed_reason"],
                   "capacity": arena["capacity"], "seats_sold": game["seats_sold"],
                   "seats_available": max(0, arena["capacity"] - game["seats_sold"]), "currency": game["currency"],
                   "prices": {"courtside": game["price_courtside"], "lower_bowl": game["price_lower"],
                              "upper_bowl": game["price_upper"]}})
    return result


@tool("read")
def list_fan_orders(fan_id: str) -> list:
    """List a fan's ticket orders with the game, section, quantity, amounts and status.

    Args:
        fan_id: The fan's id, e.g. "FAN-000012".
    """
    db.get("fans", fan_id)
    orders = []
    for o in db.find("ticket_orders", {"fan_id": fan_id}, order_by="ordered_at"):
        game = db.get("games", o["game_id"])
        orders.append({"order_id": o["order_id"], "game_id": o["game_id"], "game_date": game["game_date"],
                       "home_club": club_name(game["home_club_id"]), "away_club": club_name(game["away_club_id"]),
                       "game_status": game["status"], "section": o["section"], "quantity": o["quantity"],
                       "unit_price": o["unit_price"], "fees": o["fees"], "total": o["total"],
                       "currency": o["currency"], "status": o["status"], "refund_amount": o["refund_amount"],
                       "ordered_at": o["ordered_at"]})
    return orders


@tool("write")
def sign_free_agent(staff_id: str, player_id: str, salary: float, years: int, jersey_number: int) -> dict:
    """Sign a free agent to the staff member's club (GM or assistant GM only).

    The roster must have room (at most 15), the player must have no open injury, the number must be free
    and not retired, and the payroll must stay under the salary cap unless the salary is the league minimum.

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000001".
        player_id: The free agent's id, e.g. "PLR-000003".
        salary: Annual salary in USD, e.g. 2500000.0.
        years: Contract length in seasons, 1 to 4, e.g. 2.
        jersey_number: The number he will wear, e.g. 8.
    """
    staff = db.get("staff", staff_id)
    club = db.get("clubs", staff["club_id"])
    acting_staff(staff_id, club["club_id"], ROSTER_ROLES, "sign players")
    player = db.get("players", player_id)
    if player["roster_status"] != "free_agent":
        raise ToolError(f"{full_name(player)} is under contract with {club_name(player['club_id'])}, not a free agent")
    injury = open_injury(player_id)
    if injury is not None:
        raise ToolError(f"{full_name(player)} has an open injury ({injury['description']}) and cannot pass a physical")
    roster = rostered(club["club_id"])
    if len(roster) >= ROSTER_MAX:
        raise ToolError(f"the {club['name']} already carry {len(roster)} players; the maximum is {ROSTER_MAX}")
    if salary < MIN_SALARY or salary > MAX_SALARY:
        raise ToolError(f"salaries run from {MIN_SALARY:,.0f} to {MAX_SALARY:,.0f} USD")
    if years < 1 or years > MAX_CONTRACT_YEARS:
        raise ToolError(f"contracts run 1 to {MAX_CONTRACT_YEARS} seasons")
    payroll = payroll_of(club["club_id"])
    if payroll + salary > SALARY_CAP and salary != MIN_SALARY:
        raise ToolError(f"payroll would be {payroll + salary:,.2f}, over the {SALARY_CAP:,.0f} cap; "
                        f"over the cap only a minimum contract ({MIN_SALARY:,.0f}) is allowed")
    check_jersey(club, jersey_number, player_id)
    db.update("players", player_id, {"club_id": club["club_id"], "roster_status": "rostered", "salary": float(salary),
                                     "contract_end_year": 2025 + years, "jersey_number": jersey_number})
    new_payroll = round(payroll + salary, 2)
    return {"player_id": player_id, "name": full_name(player), "club_id": club["club_id"], "salary": float(salary),
            "contract_end_year": 2025 + years, "jersey_number": jersey_number, "roster_size": len(roster) + 1,
            "payroll": new_payroll, "cap_space": round(SALARY_CAP - new_payroll, 2)}


@tool("write")
def release_player(staff_id: str, player_id: str) -> dict:
    """Release (waive) a rostered player, who becomes a free agent (GM or assistant GM of his club).

    Injured players cannot be released, and a roster may not drop below 13 players.

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000001".
        player_id: The player's id, e.g. "PLR-000042".
    """
    player = club_player(player_id)
    club_id = player["club_id"]
    acting_staff(staff_id, club_id, ROSTER_ROLES, "release players")
    injury = open_injury(player_id)
    if injury is not None:
        raise ToolError(f"{full_name(player)} has an open injury ({injury['description']}); "
                        "injured players cannot be released until cleared")
    roster = rostered(club_id)
    if len(roster) <= ROSTER_MIN:
        raise ToolError(f"the roster holds {len(roster)} players; it may not drop below {ROSTER_MIN}")
    db.update("players", player_id, {"club_id": None, "roster_status": "free_agent", "salary": 0.0,
                                     "contract_end_year": None, "jersey_number": None})
    payroll = payroll_of(club_id)
    return {"player_id": player_id, "name": full_name(player), "released_by": club_id,
            "roster_size": len(roster) - 1, "payroll": payroll, "cap_space": round(SALARY_CAP - payroll, 2)}


@tool("write")
def change_jersey_number(staff_id: str, player_id: str, jersey_number: int) -> dict:
    """Give a rostered player a new jersey number (GM, assistant GM or operations manager of his club).

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000003".
        player_id: The player's id, e.g. "PLR-000042".
        jersey_number: The new number, 0 to 99, e.g. 23.
    """
    player = club_player(player_id)
    acting_staff(staff_id, player["club_id"], JERSEY_ROLES, "change jersey numbers")
    if player["jersey_number"] == jersey_number:
        raise ToolError(f"{full_name(player)} already wears number {jersey_number}")
    check_jersey(db.get("clubs", player["club_id"]), jersey_number, player_id)
    db.update("players", player_id, {"jersey_number": jersey_number})
    return {"player_id": player_id, "name": full_name(player), "old_number": player["jersey_number"],
            "new_number": jersey_number}


@tool("write")
def record_injury(staff_id: str, player_id: str, description: str,
                  designation: Literal["out", "doubtful", "questionable", "day_to_day"], expected_return: str) -> dict:
    """Put a rostered player on the injury report (head athletic trainer of his club only).

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000002".
        player_id: The player's id, e.g. "PLR-000042".
        description: What the injury is, e.g. "left ankle sprain".
        designation: Game status while injured, e.g. "out".
        expected_return: Expected return date, after today, YYYY-MM-DD, e.g. "2026-02-20".
    """
    player = club_player(player_id)
    acting_staff(staff_id, player["club_id"], MEDICAL_ROLES, "report injuries")
    check_date(expected_return, "expected_return")
    if expected_return <= clock.today():
        raise ToolError("the expected return date must be after today")
    injury = open_injury(player_id)
    if injury is not None:
        raise ToolError(f"{full_name(player)} already has an open injury ({injury['injury_id']}); update that one")
    if not description.strip():
        raise ToolError("describe the injury")
    return db.insert("injuries", {"player_id": player_id, "reported_on": clock.today(), "status": "open",
                                  "description": description.strip().lower(), "designation": designation,
                                  "cleared_on": None, "expected_return": expected_return})


@tool("write")
def clear_player(staff_id: str, player_id: str) -> dict:
    """Clear a player to return: his open injury is closed today (head athletic trainer of his club only).

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000002".
        player_id: The player's id, e.g. "PLR-000042".
    """
    player = club_player(player_id)
    acting_staff(staff_id, player["club_id"], MEDICAL_ROLES, "clear injured players")
    injury = open_injury(player_id)
    if injury is None:
        raise ToolError(f"{full_name(player)} has no open injury to clear")
    return db.update("injuries", injury["injury_id"], {"status": "cleared", "cleared_on": clock.today()})


@tool("write")
def record_final_score(staff_id: str, game_id: str, home_score: int, away_score: int) -> dict:
    """Enter the final score of a game that has tipped off (operations manager of the home club only).

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000003".
        game_id: The game's id, e.g. "GAM-000080".
        home_score: Points scored by the home club, e.g. 112.
        away_score: Points scored by the visitors, e.g. 104.
    """
    game = db.get("games", game_id)
    acting_staff(staff_id, game["home_club_id"], GAME_OPS_ROLES, "enter results")
    if game["status"] != "scheduled":
        raise ToolError(f"game {game_id} is {game['status']}; only scheduled games get a result")
    if not has_tipped_off(game):
        raise ToolError(f"game {game_id} tips off at {tipoff(game)}; results are entered after the game")
    if home_score < 40 or away_score < 40 or home_score > 200 or away_score > 200:
        raise ToolError("scores must be between 40 and 200 points")
    if home_score == away_score:
        raise ToolError("games cannot end tied; overtime is played until there is a winner")
    db.update("games", game_id, {"status": "final", "home_score": home_score, "away_score": away_score})
    winner = game["home_club_id"] if home_score > away_score else game["away_club_id"]
    return {"game_id": game_id, "status": "final", "home_club_id": game["home_club_id"], "home_score": home_score,
            "away_club_id": game["away_club_id"], "away_score": away_score, "winner_club_id": winner}


@tool("write")
def postpone_game(staff_id: str, game_id: str, reason: Literal["weather", "arena_issue", "health_and_safety"]) -> dict:
    """Postpone a scheduled game that has not tipped off (operations manager of the home club only).

    Tickets stay valid for the new date and may be cancelled for a full refund.

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000003".
        game_id: The game's id, e.g. "GAM-000095".
        reason: Why it is postponed, e.g. "weather".
    """
    game = db.get("games", game_id)
    acting_staff(staff_id, game["home_club_id"], GAME_OPS_ROLES, "postpone games")
    if game["status"] != "scheduled":
        raise ToolError(f"game {game_id} is {game['status']}; only scheduled games can be postponed")
    if has_tipped_off(game):
        raise ToolError(f"game {game_id} tipped off at {tipoff(game)} and can no longer be postponed")
    db.update("games", game_id, {"status": "postponed", "postponed_reason": reason})
    holders = len([o for o in db.find("ticket_orders", {"game_id": game_id}) if o["status"] == "confirmed"])
    return {"game_id": game_id, "status": "postponed", "reason": reason, "ticket_orders_affected": holders}


@tool("write")
def reschedule_game(staff_id: str, game_id: str, new_date: str, tip_time: str | None = None) -> dict:
    """Give a postponed game a new date (operations manager of the home club only).

    The date must be after today and by the season's end (2026-04-12); the arena and both clubs must have
    no other game that day.

    Args:
        staff_id: The calling staff member's id, e.g. "STF-000003".
        game_id: The postponed game's id, e.g. "GAM-000061".
        new_date: The new game date, YYYY-MM-DD, e.g. "2026-03-18".
        tip_time: New local tip-off time HH:MM; the old time is kept if not given, e.g. "19:30".
    """
    game = db.get("games", game_id)
    acting_staff(staff_id, game["home_club_id"], GAME_OPS_ROLES, "reschedule games")
    if game["status"] != "postponed":
        raise ToolError(f"game {game_id} is {game['status']}; only postponed games are rescheduled")
    check_date(new_date, "new_date")
    if new_date <= clock.today() or new_date > SEASON_END:
        raise ToolError(f"the new date must be after {clock.today()} and no later than {SEASON_END}")
    time = game["tip_time"] if tip_time is None else tip_time.strip()
    if len(time) != 5 or time[2] != ":" or not (time[:2] + time[3:]).isdigit() or time > "23:59":
        raise ToolError(f"tip_time must look like 19:30, got {time}")
    for other in db.find("games", {"game_date": new_date}):
        if other["game_id"] == game_id or other["status"] == "postponed":
            continue
        if other["arena_id"] == game["arena_id"]:
            raise ToolError(f"{db.get('arenas', game['arena_id'])['name']} already hosts {other['game_id']} on {new_date}")
        for club in [game["home_club_id"], game["away_club_id"]]:
            if club in [other["home_club_id"], other["away_club_id"]]:
                raise ToolError(f"{club_name(club)} already play {other['game_id']} on {new_date}")
    db.update("games", game_id, {"status": "scheduled", "game_date": new_date, "tip_time": time,
                                 "postponed_reason": None})
    return game_summary(db.get("games", game_id))


@tool("write")
def buy_tickets(fan_id: str, game_id: str, section: Literal["courtside", "lower_bowl", "upper_bowl"],
                quantity: int) -> dict:
    """Buy tickets for a scheduled game before tip-off, in one section.

    Standard fans pay a 10% service fee on the tickets; season members pay none.

    Args:
        fan_id: The fan's id, e.g. "FAN-000012".
        game_id: The game's id, e.g. "GAM-000095".
        section: Seating section, e.g. "lower_bowl".
        quantity: Number of tickets, e.g. 2.
    """
    fan = db.get("fans", fan_id)
    if fan["status"] != "active":
        raise ToolError(f"fan account {fan_id} is {fan['status']} and cannot buy tickets")
    game = db.get("games", game_id)
    if game["status"] != "scheduled":
        raise ToolError(f"game {game_id} is {game['status']}; tickets are sold only for scheduled games")
    if has_tipped_off(game):
        raise ToolError(f"game {game_id} tipped off at {tipoff(game)}; sales are closed")
    if quantity < 1 or quantity > MAX_TICKETS_PER_ORDER:
        raise ToolError(f"an order holds 1 to {MAX_TICKETS_PER_ORDER} tickets")
    if section == "courtside" and quantity > MAX_COURTSIDE_PER_ORDER:
        raise ToolError(f"at most {MAX_COURTSIDE_PER_ORDER} courtside seats per order")
    held = sum([o["quantity"] for o in db.find("ticket_orders", {"fan_id": fan_id, "game_id": game_id})
                if o["status"] == "confirmed"])
    if held + quantity > MAX_TICKETS_PER_FAN_GAME:
        raise ToolError(f"a fan may hold at most {MAX_TICKETS_PER_FAN_GAME} tickets per game; {fan_id} already holds {held}")
    capacity = db.get("arenas", game["arena_id"])["capacity"]
    if game["seats_sold"] + quantity > capacity:
        raise ToolError(f"only {max(0, capacity - game['seats_sold'])} seat(s) left for game {game_id}")
    unit = game[PRICE_COLUMN[section]]
    subtotal = round(unit * quantity, 2)
    fees = 0.0 if fan["membership"] == "season_member" else round(subtotal * SERVICE_FEE_RATE, 2)
    db.update("games", game_id, {"seats_sold": game["seats_sold"] + quantity})
    return db.insert("ticket_orders", {"fan_id": fan_id, "game_id": game_id, "section": section, "quantity": quantity,
                                       "unit_price": unit, "fees": fees, "total": round(subtotal + fees, 2),
                                       "currency": game["currency"], "status": "confirmed", "refund_amount": 0.0,
                                       "ordered_at": clock.now()})


@tool("write")
def cancel_ticket_order(fan_id: str, order_id: str) -> dict:
    """Cancel a fan's confirmed ticket order and refund it under the refund rules.

    Postponed game: everything is refunded. Otherwise 7 or more days before the game the tickets are
    refunded in full (fees are kept), 2 to 6 days before half of the tickets; later no cancellation.

    Args:
        fan_id: The fan's id, e.g. "FAN-000012".
        order_id: The order's id, e.g. "TKO-000031".
    """
    db.get("fans", fan_id)
    order = db.owned("ticket_orders", order_id, "fan_id", fan_id, "order")
    if order["status"] != "confirmed":
        raise ToolError(f"order {order_id} is already {order['status']}")
    game = db.get("games", order["game_id"])
    subtotal = round(order["unit_price"] * order["quantity"], 2)
    if game["status"] == "postponed":
        refund = order["total"]
        rule = "postponed game: full refund including fees"
    elif game["status"] == "final" or has_tipped_off(game):
        raise ToolError(f"game {game['game_id']} has been played; the order cannot be cancelled")
    else:
        days = clock.days_between(clock.today(), game["game_date"])
        if days >= FULL_REFUND_DAYS:
            refund = subtotal
            rule = f"{days} days before the game: tickets refunded in full, fees kept"
        elif days >= HALF_REFUND_DAYS:
            refund = round(subtotal * 0.5, 2)
            rule = f"{days} days before the game: half of the ticket price refunded"
        else:
            raise ToolError(f"the game is {days} day(s) away; orders cannot be cancelled within {HALF_REFUND_DAYS} days")
    db.update("ticket_orders", order_id, {"status": "cancelled", "refund_amount": refund})
    db.update("games", game["game_id"], {"seats_sold": max(0, game["seats_sold"] - order["quantity"])})
    return {"order_id": order_id, "status": "cancelled", "refund_amount": refund, "currency": order["currency"],
            "rule": rule}


@tool("write")
def transfer_to_human_agents(reason: Literal["large_contract_release", "other"], summary: str | None = None) -> dict:
    """Hand the caller over to a person at the league office, when the policy says a request is theirs to handle.

    Args:
        reason: Why the caller is handed over, e.g. "large_contract_release".
        summary: A short note of the request for the league office, e.g. "GM wants to waive a 31,000,000 player".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
