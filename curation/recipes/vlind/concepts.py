"""The paper's 11 concepts (vlind-bench.txt Sec. 4, Table 1) with hand-written 3-shot examples
for the App. A generation prompt, and a small bank of further triples per concept that the
offline drafter hands out in the demo (labelled offline wherever they appear).

A triple is (context, true statement, false statement): the context is counterfactual and can be
drawn; the true statement is true in that context; the false statement is false in the context
but true by common sense (Sec. 3: s_cf and s_fact). No Django import.

The "location" examples are the ones App. A itself fills the template with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NAMES = (
    "climate",
    "color",
    "diet",
    "folklore",
    "habitat",
    "history",
    "landmark",
    "location",
    "size",
    "time",
    "weight",
)


@dataclass(frozen=True)
class ConceptSpec:
    name: str
    description: str
    image_hint: str  # how the first example is depicted ("an image of …")
    examples: tuple[tuple[str, str, str], ...]  # three (context, true, false)
    bank: tuple[tuple[str, str, str], ...] = field(default=())  # offline drafter's triples


def triple(context: str, true: str, false: str) -> dict:
    return {"context": context, "true_statement": true, "false_statement": false}


SPECS: dict[str, ConceptSpec] = {
    spec.name: spec
    for spec in (
        ConceptSpec(
            "climate",
            "Weather and climate of places and seasons.",
            "an image of snow-covered sand dunes in the Sahara",
            (
                (
                    "Snow covers the sand dunes of the Sahara desert.",
                    "The sand dunes are white with snow.",
                    "The sand dunes are hot and dry.",
                ),
                (
                    "Palm trees and sunbathers fill a beach in Antarctica.",
                    "People are sunbathing in Antarctica.",
                    "Antarctica is too cold for sunbathing.",
                ),
                (
                    "Icicles hang from the leaves of a tropical rainforest.",
                    "The rainforest leaves are frozen.",
                    "The rainforest is warm and humid.",
                ),
            ),
            (
                (
                    "A blizzard blows through the streets of Dubai in August.",
                    "Snow is falling in Dubai.",
                    "Dubai is hot in August.",
                ),
                (
                    "Cacti grow in the snowy Arctic tundra.",
                    "The cacti are surrounded by snow.",
                    "Cacti grow in hot deserts.",
                ),
                (
                    "People wear heavy winter coats on a beach in Hawaii.",
                    "The beachgoers are dressed for cold weather.",
                    "People wear swimsuits on the beaches of Hawaii.",
                ),
                (
                    "The Amazon river is frozen solid and people skate on it.",
                    "People are ice skating on the Amazon river.",
                    "The Amazon river flows through a warm rainforest.",
                ),
                (
                    "Frost covers the camels resting in a desert oasis at noon.",
                    "The camels are covered in frost.",
                    "The desert is scorching at noon.",
                ),
                (
                    "Tourists build snowmen on the beaches of Rio de Janeiro.",
                    "There is snow on the beach in Rio de Janeiro.",
                    "The beaches of Rio de Janeiro are warm and sunny.",
                ),
            ),
        ),
        ConceptSpec(
            "color",
            "The usual colours of things.",
            "an image of a tree hung with bright blue bananas",
            (
                (
                    "Bananas growing on the tree are bright blue.",
                    "The bananas are blue.",
                    "The bananas are yellow.",
                ),
                (
                    "A flamingo with jet-black feathers stands in a lake.",
                    "The flamingo's feathers are black.",
                    "The flamingo's feathers are pink.",
                ),
                (
                    "The leaves of every tree in the forest are purple in summer.",
                    "The summer leaves are purple.",
                    "The summer leaves are green.",
                ),
            ),
            (
                (
                    "A fire truck painted bright green parks by the station.",
                    "The fire truck is green.",
                    "The fire truck is red.",
                ),
                (
                    "Snow falling on the mountain is orange.",
                    "The snow is orange.",
                    "The snow is white.",
                ),
                (
                    "A zebra has red and white stripes.",
                    "The zebra's stripes are red and white.",
                    "The zebra's stripes are black and white.",
                ),
                (
                    "The sky above the city is green at noon.",
                    "The sky is green.",
                    "The sky is blue.",
                ),
                (
                    "A ripe tomato on the vine is blue.",
                    "The tomato is blue.",
                    "The tomato is red.",
                ),
                (
                    "Milk poured into a glass is black.",
                    "The milk is black.",
                    "The milk is white.",
                ),
            ),
        ),
        ConceptSpec(
            "diet",
            "What animals eat.",
            "an image of a lion eating a bowl of salad",
            (
                (
                    "A lion eats a bowl of fresh salad in the savanna.",
                    "The lion is eating vegetables.",
                    "The lion is eating meat.",
                ),
                (
                    "A koala chews on a slice of pepperoni pizza.",
                    "The koala is eating pizza.",
                    "The koala is eating eucalyptus leaves.",
                ),
                (
                    "A cow grazes on a pile of fish at the farm.",
                    "The cow is eating fish.",
                    "The cow is eating grass.",
                ),
            ),
            (
                (
                    "A panda eats a hamburger instead of bamboo.",
                    "The panda is eating a hamburger.",
                    "The panda is eating bamboo.",
                ),
                (
                    "A rabbit gnaws on a large steak.",
                    "The rabbit is eating meat.",
                    "The rabbit is eating a carrot.",
                ),
                (
                    "A hummingbird drinks coffee from a mug.",
                    "The hummingbird is drinking coffee.",
                    "The hummingbird is drinking flower nectar.",
                ),
                (
                    "A shark nibbles on seaweed while ignoring the fish around it.",
                    "The shark is eating seaweed.",
                    "The shark is hunting fish.",
                ),
                (
                    "A squirrel stores chocolate bars in its tree.",
                    "The squirrel is storing chocolate bars.",
                    "The squirrel is storing nuts.",
                ),
                (
                    "A horse eats a plate of spaghetti in the stable.",
                    "The horse is eating spaghetti.",
                    "The horse is eating hay.",
                ),
            ),
        ),
        ConceptSpec(
            "folklore",
            "Characters and objects of myths, fairy tales and holidays.",
            "an image of Santa Claus in a speedboat pulled by dolphins",
            (
                (
                    "Santa Claus delivers presents in a speedboat pulled by dolphins.",
                    "Santa's vehicle is pulled by dolphins.",
                    "Santa's sleigh is pulled by reindeer.",
                ),
                (
                    "A witch flies through the night sky on a vacuum cleaner.",
                    "The witch is riding a vacuum cleaner.",
                    "The witch is riding a broomstick.",
                ),
                (
                    "A vampire sunbathes happily at noon on a crowded beach.",
                    "The vampire is in the sunlight.",
                    "The vampire avoids the sunlight.",
                ),
            ),
            (
                (
                    "A leprechaun guards a pot of silver coins at the end of the rainbow.",
                    "The pot is full of silver coins.",
                    "The pot is full of gold coins.",
                ),
                (
                    "Cinderella's carriage turns into a watermelon at midnight.",
                    "The carriage becomes a watermelon.",
                    "The carriage becomes a pumpkin.",
                ),
                (
                    "A genie comes out of a soda can.",
                    "The genie is emerging from a can.",
                    "The genie is emerging from a lamp.",
                ),
                (
                    "The Easter Bunny hides colored pinecones in the garden.",
                    "The Easter Bunny is hiding pinecones.",
                    "The Easter Bunny is hiding eggs.",
                ),
                (
                    "A mermaid has the lower body of a horse.",
                    "The mermaid has hooves.",
                    "The mermaid has a fish tail.",
                ),
                (
                    "A dragon breathes ice that freezes the village.",
                    "The dragon is breathing ice.",
                    "The dragon is breathing fire.",
                ),
            ),
        ),
        ConceptSpec(
            "habitat",
            "Where animals and plants live.",
            "an image of dolphins leaping out of desert sand dunes",
            (
                (
                    "Dolphins leap out of the dunes of a sandy desert.",
                    "The dolphins are surrounded by sand.",
                    "The dolphins are in the sea.",
                ),
                (
                    "A polar bear lives in a dense tropical jungle.",
                    "The polar bear is surrounded by jungle plants.",
                    "The polar bear is on sea ice.",
                ),
                (
                    "A camel walks across the ocean floor among coral reefs.",
                    "The camel is underwater.",
                    "The camel is in the desert.",
                ),
            ),
            (
                (
                    "A family of penguins nests in the branches of a tall oak tree.",
                    "The penguins are in a tree.",
                    "The penguins are on the ice.",
                ),
                (
                    "A herd of elephants lives on the snowy peak of a mountain.",
                    "The elephants are standing in snow.",
                    "The elephants are on the savanna.",
                ),
                (
                    "Goldfish swim through the air inside a living room.",
                    "The goldfish are floating in the air.",
                    "The goldfish are swimming in water.",
                ),
                (
                    "A kangaroo hops along the icy plains of the North Pole.",
                    "The kangaroo is in the snow.",
                    "The kangaroo is in the Australian outback.",
                ),
                (
                    "An octopus lives in a bird's nest high in a tree.",
                    "The octopus is in a nest.",
                    "The octopus is in the ocean.",
                ),
                (
                    "A cactus grows at the bottom of a lake.",
                    "The cactus is underwater.",
                    "The cactus is in the desert.",
                ),
            ),
        ),
        ConceptSpec(
            "history",
            "Historical periods, people and the things they had.",
            "an image of ancient Egyptians lifting pyramid stones with construction cranes",
            (
                (
                    "Ancient Egyptians build the pyramids with modern construction cranes.",
                    "Cranes are lifting the pyramid stones.",
                    "The pyramids are built without machines.",
                ),
                (
                    "A medieval knight rides a motorcycle into battle.",
                    "The knight is riding a motorcycle.",
                    "The knight is riding a horse.",
                ),
                (
                    "Dinosaurs roam a busy city street next to people.",
                    "People and dinosaurs are on the same street.",
                    "Dinosaurs lived long before humans.",
                ),
            ),
            (
                (
                    "Napoleon checks a smartphone on the battlefield of Waterloo.",
                    "Napoleon is holding a smartphone.",
                    "Napoleon has no smartphone.",
                ),
                (
                    "Roman gladiators fight in the Colosseum with laser swords.",
                    "The gladiators are holding laser swords.",
                    "The gladiators are holding metal swords.",
                ),
                (
                    "Vikings cross the ocean in an aircraft carrier.",
                    "The Vikings are on an aircraft carrier.",
                    "The Vikings are on a wooden longship.",
                ),
                (
                    "Cavemen cook their food in a microwave oven.",
                    "The cavemen are using a microwave.",
                    "The cavemen are cooking over a fire.",
                ),
                (
                    "Leonardo da Vinci paints the Mona Lisa on a tablet computer.",
                    "Da Vinci is painting on a tablet.",
                    "Da Vinci is painting on a wooden panel.",
                ),
                (
                    "The Wright brothers' first airplane is a jet airliner.",
                    "The Wright brothers' airplane has jet engines.",
                    "The Wright brothers' airplane has propellers.",
                ),
            ),
        ),
        ConceptSpec(
            "landmark",
            "Famous buildings, monuments and their features.",
            "an image of the Statue of Liberty holding a sword",
            (
                (
                    "The Statue of Liberty holds a sword instead of a torch.",
                    "The Statue of Liberty is holding a sword.",
                    "The Statue of Liberty is holding a torch.",
                ),
                (
                    "The Eiffel Tower is made entirely of glass.",
                    "The Eiffel Tower is transparent.",
                    "The Eiffel Tower is made of iron.",
                ),
                (
                    "The Leaning Tower of Pisa stands perfectly straight.",
                    "The Tower of Pisa is vertical.",
                    "The Tower of Pisa is leaning.",
                ),
            ),
            (
                (
                    "The Great Sphinx of Giza has the head of a cat.",
                    "The Sphinx has a cat's head.",
                    "The Sphinx has a human head.",
                ),
                (
                    "Big Ben's clock tower is painted bright pink.",
                    "Big Ben's tower is pink.",
                    "Big Ben's tower is made of yellow stone.",
                ),
                (
                    "The Sydney Opera House has a flat, square roof.",
                    "The Opera House's roof is flat.",
                    "The Opera House's roof has curved shells.",
                ),
                (
                    "Mount Rushmore shows the carved faces of four cats.",
                    "Mount Rushmore shows cats' faces.",
                    "Mount Rushmore shows presidents' faces.",
                ),
                (
                    "The Colosseum in Rome stands complete, without a single ruined wall.",
                    "The Colosseum is intact.",
                    "The Colosseum is partly ruined.",
                ),
                (
                    "The Taj Mahal is built of red bricks.",
                    "The Taj Mahal is red.",
                    "The Taj Mahal is white.",
                ),
            ),
        ),
        ConceptSpec(
            "location",
            "Where places and objects are found.",
            "an image of a underwater city",
            (
                (
                    "A variety of marine life lives in the city built underwater.",
                    "The city’s buildings are surrounded by marine life.",
                    "The city has human residents.",
                ),
                (
                    "A ship is located in the middle of a large city.",
                    "The ship is surrounded by buildings.",
                    "The ship is in the ocean.",
                ),
                (
                    "A glacier is found in a tropical jungle.",
                    "The glacier coexists with tropical trees.",
                    "The glacier is in the polar region.",
                ),
            ),
            (
                (
                    "A lighthouse stands in the middle of a wheat field far from any sea.",
                    "The lighthouse is surrounded by wheat.",
                    "The lighthouse is on the coast.",
                ),
                (
                    "A subway train runs across the surface of the moon.",
                    "The train is on the moon.",
                    "The subway train runs underground in a city.",
                ),
                (
                    "A waterfall pours down the side of a skyscraper.",
                    "Water is falling from the skyscraper.",
                    "The waterfall is on a cliff.",
                ),
                (
                    "A sailboat sails across the sand of a desert.",
                    "The sailboat is on sand.",
                    "The sailboat is on water.",
                ),
                (
                    "A farm with cows and barns sits on top of a cloud.",
                    "The farm is in the sky.",
                    "The farm is on the ground.",
                ),
                (
                    "A grand piano stands in the middle of a river.",
                    "The piano is surrounded by water.",
                    "The piano is inside a building.",
                ),
            ),
        ),
        ConceptSpec(
            "size",
            "How big things are compared with each other.",
            "an image of a tiny elephant sitting in a teacup",
            (
                (
                    "An elephant is small enough to sit in a teacup.",
                    "The elephant fits in the teacup.",
                    "The elephant is larger than the teacup.",
                ),
                (
                    "A ladybug is as large as a car.",
                    "The ladybug is the size of a car.",
                    "The ladybug is smaller than a fingertip.",
                ),
                (
                    "A giant strawberry is taller than the house beside it.",
                    "The strawberry is taller than the house.",
                    "The strawberry is smaller than the house.",
                ),
            ),
            (
                (
                    "A mouse towers over a cat in the kitchen.",
                    "The mouse is bigger than the cat.",
                    "The mouse is smaller than the cat.",
                ),
                (
                    "A whale swims in a fishbowl on a desk.",
                    "The whale fits in the fishbowl.",
                    "The whale is bigger than the fishbowl.",
                ),
                (
                    "An ant carries a person on its back.",
                    "The ant is bigger than the person.",
                    "The ant is smaller than the person.",
                ),
                (
                    "A giraffe is shorter than the grass around it.",
                    "The grass is taller than the giraffe.",
                    "The giraffe is taller than the grass.",
                ),
                (
                    "A pencil is as tall as the lamppost beside it.",
                    "The pencil is as tall as the lamppost.",
                    "The pencil is shorter than the lamppost.",
                ),
                (
                    "A horse is small enough to stand on a person's hand.",
                    "The horse fits on the hand.",
                    "The horse is bigger than a hand.",
                ),
            ),
        ),
        ConceptSpec(
            "time",
            "Times of day, seasons, ageing and the order of events.",
            "an image of a clock tower showing noon under a dark, starry sky",
            (
                (
                    "The sky is dark and full of stars while the clock tower shows noon.",
                    "It is dark at noon.",
                    "The sky is bright at noon.",
                ),
                (
                    "A newborn baby in a hospital crib has a long gray beard.",
                    "The baby has a beard.",
                    "The newborn baby has no beard.",
                ),
                (
                    "A candle grows taller as it burns.",
                    "The candle gets taller while burning.",
                    "The candle gets shorter while burning.",
                ),
            ),
            (
                (
                    "Autumn leaves rise from the ground and reattach to the trees.",
                    "The leaves are moving up to the branches.",
                    "The autumn leaves fall to the ground.",
                ),
                (
                    "The sand in an hourglass flows upward.",
                    "The sand is moving upward.",
                    "The sand falls downward.",
                ),
                (
                    "The sun sets in the east behind the city skyline.",
                    "The sun is setting in the east.",
                    "The sun sets in the west.",
                ),
                (
                    "A puppy is older and grayer than the old dog beside it.",
                    "The puppy has gray fur.",
                    "The puppy is younger than the old dog.",
                ),
                (
                    "Cherry trees bloom with pink blossoms in a snowy winter.",
                    "The cherry trees are blooming in winter.",
                    "Cherry trees bloom in spring.",
                ),
                (
                    "Ice cubes in a cup of hot tea grow bigger over time.",
                    "The ice cubes are growing.",
                    "The ice cubes melt in the hot tea.",
                ),
            ),
        ),
        ConceptSpec(
            "weight",
            "How heavy things are compared with each other.",
            "an image of a balance scale where a feather outweighs a brick",
            (
                (
                    "A feather on a balance scale outweighs a brick.",
                    "The feather is heavier than the brick.",
                    "The brick is heavier than the feather.",
                ),
                (
                    "A child lifts a car above his head with one hand.",
                    "The child is lifting a car.",
                    "The car is too heavy for the child to lift.",
                ),
                (
                    "A large boulder floats in the air like a balloon.",
                    "The boulder is floating.",
                    "The boulder rests on the ground.",
                ),
            ),
            (
                (
                    "A balloon sinks to the floor and dents the wooden boards.",
                    "The balloon dented the floor.",
                    "The balloon floats in the air.",
                ),
                (
                    "A cat on a seesaw lifts an elephant on the other side.",
                    "The elephant is up in the air.",
                    "The elephant is on the ground.",
                ),
                (
                    "An iron anchor floats on the surface of the sea.",
                    "The anchor is floating.",
                    "The anchor sinks in water.",
                ),
                (
                    "A soap bubble crushes the car it lands on.",
                    "The car is crushed by the bubble.",
                    "The bubble pops on the car.",
                ),
                (
                    "A bowling ball drifts away in the breeze like a leaf.",
                    "The wind is carrying the bowling ball.",
                    "The bowling ball stays on the ground in the wind.",
                ),
                (
                    "A person carries a whole house on their back with ease.",
                    "The person is carrying a house.",
                    "The house is too heavy to carry.",
                ),
            ),
        ),
    )
}


def default_concepts() -> list[dict]:
    """The 11 concepts as rows for a new bench (name, description, image hint, examples)."""
    return [
        {
            "name": spec.name,
            "description": spec.description,
            "image_hint": spec.image_hint,
            "examples": [triple(*ex) for ex in spec.examples],
            "position": position,
        }
        for position, spec in enumerate(SPECS[name] for name in NAMES)
    ]


def offline_bank(concept: str) -> list[dict]:
    """Triples the offline drafter may hand out for ``concept`` (its bank); [] if unknown."""
    spec = SPECS.get(concept.strip().lower())
    return [triple(*t) for t in spec.bank] if spec else []
